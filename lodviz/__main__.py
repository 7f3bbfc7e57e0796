"""``python -m lodviz`` runs the command line."""

from lodviz.cli import main

main()
