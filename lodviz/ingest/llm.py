"""An LLM compressor for any endpoint that speaks OpenAI's chat-completions protocol.

``OpenAICompressor`` asks a chat model for the summary and the headline of
each memory: ``POST {base_url}/chat/completions`` with ``model`` and
``messages``, the API key as a Bearer token. OpenAI itself, vLLM, Ollama
(``http://localhost:11434/v1``), LiteLLM and most hosted gateways speak it.

Two calls per memory, as the concept describes:

1. the summary, at about ``ratio`` (20%) of the text's length, keeping names,
   numbers, dates and decisions;
2. the headline, one sentence of at most about 20 words.

Both calls read the full text, so they are independent: the calls of a whole
batch run side by side on a small thread pool (``concurrency`` at a time).
Texts shorter than ``short_threshold`` characters are their own summary and
cost only the headline call.

Each call is retried with exponential backoff (honouring ``Retry-After``) on
429, 408 and 5xx answers, timeouts and dropped connections, ``max_retries``
times. After that, or at once for any other error status or an unusable answer
(no choices, empty content), the batch fails with ``CompressorError``, whose
message names the endpoint and the status, never the key. ``Memory`` compresses
a batch before it writes anything, so a failed batch leaves the store as it was.

Answers are cleaned before they are stored: reasoning blocks
(``<think>…</think>``), code fences, Markdown emphasis, headings and bullets,
labels such as ``Headline:`` and surrounding quotes go; the headline is one line.

Only the standard library is used (``urllib``), so the compressor adds no
dependency; proxies come from the usual ``HTTPS_PROXY``/``NO_PROXY`` variables.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from http import HTTPStatus
from typing import Any

from lodviz.errors import CompressorError, InvalidParameters
from lodviz.ingest.compress import Compressed, Compressor, shorten

log = logging.getLogger("lodviz.llm")

#: Names ``--compressor`` / ``LODVIZ_COMPRESSOR`` / ``lodviz.open(compressor=...)`` accept.
COMPRESSOR_NAMES = ("extractive", "openai")

#: Statuses worth another try: rate limits, request timeouts and server trouble.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

HEADLINE_WORDS = 20  # what the prompt asks for
_HEADLINE_HARD_LIMIT = 40  # longer answers are cut at a clause to about 30 words

SYSTEM_PROMPT = (
    "You compress memories for an AI agent's long-term memory store. "
    "Answer with the requested text only: no preamble, no labels, no quotes, no Markdown. "
    "Write in the language of the memory. Never invent facts."
)

SUMMARY_PROMPT = (
    "Summarise the memory below in about {words} words (about {chars} characters, "
    "{percent}% of its length). Keep the names, numbers, dates, decisions and commitments "
    "that matter; drop repetition and filler. Plain prose, no bullet points.\n\n"
    "<memory>\n{text}\n</memory>"
)

HEADLINE_PROMPT = (
    "Write one sentence of at most {words} words that states the core idea of the memory "
    "below, as a headline an agent scans to decide whether to open it. Keep its key name, "
    "number or date. One line, no final commentary.\n\n"
    "<memory>\n{text}\n</memory>"
)


class _Retryable(Exception):
    """One attempt failed in a way another attempt may fix."""

    def __init__(self, what: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.status = status
        self.retry_after = retry_after


class OpenAICompressor:
    """Abstractive summaries and headlines from an OpenAI-compatible chat endpoint.

    ``base_url`` is the API root (``https://api.openai.com/v1``,
    ``http://localhost:11434/v1`` for Ollama, ``http://host:8000/v1`` for vLLM);
    a URL that already ends in ``/chat/completions`` is used as it is.
    ``api_key`` is sent as ``Authorization: Bearer …`` when given.
    ``temperature``, when given, is sent with every request (some reasoning
    models refuse the field, so by default it is left out). ``backoff`` is the
    first retry's delay in seconds; it doubles each retry.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60,
        max_retries: int = 2,
        ratio: float = 0.2,
        short_threshold: int = 240,
        concurrency: int = 4,
        temperature: float | None = None,
        backoff: float = 1.0,
    ) -> None:
        base_url = (base_url or "").strip()
        model = (model or "").strip()
        if not base_url or not model:
            raise CompressorError("the OpenAI-compatible compressor needs a base URL and a model name.")
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CompressorError(
                f"the LLM base URL must start with http:// or https://, got {_redact_url(base_url)!r}."
            )
        _check_number("timeout", timeout, low=0, low_open=True)
        _check_number("ratio", ratio, low=0, high=1, low_open=True)
        _check_number("backoff", backoff, low=0)
        _check_whole("max_retries", max_retries, 0)
        _check_whole("short_threshold", short_threshold, 0)
        _check_whole("concurrency", concurrency, 1)
        if temperature is not None:
            _check_number("temperature", temperature, low=0, high=2)
        root = base_url.rstrip("/")
        self.url = root if root.endswith("/chat/completions") else f"{root}/chat/completions"
        #: The endpoint as it appears in messages: no credentials, no query string.
        self.endpoint = _redact_url(self.url)
        self.model = model
        self._api_key = api_key or None
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.ratio = ratio
        self.short_threshold = short_threshold
        self.concurrency = concurrency
        self.temperature = temperature
        self.backoff = float(backoff)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> OpenAICompressor:
        """Configured by ``LODVIZ_LLM_BASE_URL``, ``LODVIZ_LLM_MODEL`` and
        ``LODVIZ_LLM_API_KEY`` (else ``OPENAI_API_KEY``); optionally
        ``LODVIZ_LLM_TIMEOUT`` (seconds per call) and ``LODVIZ_LLM_MAX_RETRIES``."""
        env = os.environ if environ is None else environ
        base_url = (env.get("LODVIZ_LLM_BASE_URL") or "").strip()
        model = (env.get("LODVIZ_LLM_MODEL") or "").strip()
        missing = [name for name, value in (("LODVIZ_LLM_BASE_URL", base_url), ("LODVIZ_LLM_MODEL", model)) if not value]
        if missing:
            raise CompressorError(
                f"the openai compressor needs {' and '.join(missing)} "
                "(e.g. https://api.openai.com/v1 or http://localhost:11434/v1, and a model such as gpt-4o-mini); "
                "the key comes from LODVIZ_LLM_API_KEY or OPENAI_API_KEY."
            )
        api_key = (env.get("LODVIZ_LLM_API_KEY") or env.get("OPENAI_API_KEY") or "").strip() or None
        for name, option, kind in (("LODVIZ_LLM_TIMEOUT", "timeout", float), ("LODVIZ_LLM_MAX_RETRIES", "max_retries", int)):
            value = (env.get(name) or "").strip()
            if value and option not in options:
                try:
                    options[option] = kind(value)
                except ValueError:
                    raise InvalidParameters(f"{name} must be a {'number' if kind is float else 'whole number'}, got {value!r}.") from None
        return cls(base_url, model, api_key, **options)

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompressor({self.endpoint!r}, model={self.model!r})"

    # -- the Compressor protocol ------------------------------------------------

    def compress(self, texts: Sequence[str]) -> list[Compressed]:
        texts = [t.strip() for t in texts]
        if not texts:
            return []
        jobs: list[tuple[int, str]] = []  # (index, "summary" | "headline")
        for i, text in enumerate(texts):
            if len(text) >= self.short_threshold:
                jobs.append((i, "summary"))
            jobs.append((i, "headline"))
        started = time.monotonic()
        failed = threading.Event()  # once one call fails for good, the others stop early
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(jobs)), thread_name_prefix="lodviz-llm")
        try:
            futures: dict[Future[str], tuple[int, str]] = {
                pool.submit(self._job, texts[i], kind, failed): (i, kind) for i, kind in jobs
            }
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            error = next((f.exception() for f in done if f.exception() is not None), None)
            if error is not None:
                raise error
            answers = {key: future.result() for future, key in futures.items()}
        except BaseException:
            # Stop the queued calls; the ones in flight end on their own without retrying.
            failed.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        log.info(
            "compressed %d memories with %s at %s in %.1f s (%d calls)",
            len(texts), self.model, self.endpoint, time.monotonic() - started, len(jobs),
        )
        out = []
        for i, text in enumerate(texts):
            summary = answers.get((i, "summary"), text)
            if len(summary) >= len(text):
                log.warning("the model's summary of memory %d of the batch is no shorter than the text; keeping the text", i)
                summary = text
            out.append(Compressed(summary=summary, headline=answers[(i, "headline")]))
        return out

    # -- one memory, one call ----------------------------------------------------

    def _job(self, text: str, kind: str, failed: threading.Event) -> str:
        if failed.is_set():
            raise CompressorError("cancelled after another call failed.", endpoint=self.endpoint)
        if kind == "summary":
            chars = max(int(self.ratio * len(text)), 1)
            prompt = SUMMARY_PROMPT.format(
                words=max(chars // 6, 5), chars=chars, percent=round(self.ratio * 100), text=text
            )
            raw = self._chat(prompt, failed)
            summary = clean_summary(raw)
            if not summary:
                raise self._bad_answer("an empty summary")
            return summary
        raw = self._chat(HEADLINE_PROMPT.format(words=HEADLINE_WORDS, text=text), failed)
        headline = clean_headline(raw)
        if not headline:
            raise self._bad_answer("an empty headline")
        return headline

    def _bad_answer(self, what: str) -> CompressorError:
        return CompressorError(
            f"the LLM endpoint {self.endpoint} (model {self.model}) answered with {what}.",
            endpoint=self.endpoint,
            status=200,
        )

    def _chat(self, prompt: str, failed: threading.Event) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "stream": False,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._post(payload)
            except _Retryable as exc:
                if attempt == attempts or failed.is_set():
                    raise CompressorError(
                        f"the LLM endpoint {self.endpoint} {exc.what} after {attempt} "
                        f"attempt{'s' if attempt > 1 else ''}.",
                        endpoint=self.endpoint,
                        status=exc.status,
                    ) from None
                delay = self.backoff * 2 ** (attempt - 1) * (1 + 0.25 * random.random())
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, 30.0))
                log.info("%s %s; retrying in %.2f s", self.endpoint, exc.what, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, payload: bytes) -> str:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "lodviz",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
            what = f"answered HTTP {status} {_reason(exc)}" + self._server_says(exc)
            if status in RETRY_STATUSES or status >= 500:
                raise _Retryable(what, status, _retry_after(exc.headers.get("Retry-After"))) from None
            hint = " (check the API key: LODVIZ_LLM_API_KEY or OPENAI_API_KEY)" if status in (401, 403) else ""
            raise CompressorError(
                f"the LLM endpoint {self.endpoint} {what}{hint}.",
                endpoint=self.endpoint,
                status=status,
            ) from None
        except TimeoutError:
            raise _Retryable(f"did not answer within {self.timeout:g} s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise _Retryable(f"did not answer within {self.timeout:g} s") from None
            raise _Retryable(f"could not be reached ({self._scrub(str(reason))})") from None
        except (ConnectionError, OSError) as exc:  # reset or dropped mid-answer
            raise _Retryable(f"dropped the connection ({self._scrub(str(exc) or type(exc).__name__)})") from None
        return self._content(raw)

    def _content(self, raw: bytes) -> str:
        try:
            data = json.loads(raw.decode("utf-8"))
            choice = data["choices"][0]
            message = choice["message"]
        except (ValueError, UnicodeDecodeError):
            raise self._bad_answer("something that is not JSON") from None
        except (KeyError, IndexError, TypeError):
            raise self._bad_answer("JSON without choices[0].message") from None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts, as some gateways send them
            content = "".join(
                part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") in (None, "text")
            )
        if not isinstance(content, str) or not content.strip():
            refusal = message.get("refusal") if isinstance(message, dict) else None
            if refusal:
                raise self._bad_answer(f"a refusal ({self._scrub(str(refusal))[:200]})")
            raise self._bad_answer("empty content")
        return content

    def _server_says(self, exc: urllib.error.HTTPError) -> str:
        """The error message the server sent, short and without the key."""
        try:
            body = exc.read(4096).decode("utf-8", "replace")
        except Exception:  # the body is a courtesy; never let it hide the status
            return ""
        message = body
        try:
            data = json.loads(body)
            error = data.get("error", data) if isinstance(data, dict) else data
            message = error.get("message", "") if isinstance(error, dict) else str(error)
        except ValueError:
            pass
        message = " ".join(self._scrub(str(message)).split())[:200]
        return f" ({message})" if message else ""

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text


# -- cleaning answers ------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[\w-]*\s*$", re.MULTILINE)
_LABEL = re.compile(r"^(?:here(?:'s| is)[^:\n]{0,40}:|(?:the\s+)?(?:one[- ]sentence\s+)?(?:summary|headline|title)\s*:)\s*", re.IGNORECASE)
_BARE_LABEL = re.compile(r"^(?:(?:one[- ]sentence\s+)?(?:summary|headline|title))\s*:?$", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)(?=\S)(.+?)(?<=\S)\1")
_QUOTES = ("\"\"", "''", "“”", "‘’", "«»", "``")


def _clean_line(line: str) -> str:
    previous = None
    while line != previous:  # '"**Title**"' needs quotes, then emphasis, to go
        previous = line
        line = _HEADING.sub("", line)
        line = _BULLET.sub("", line)
        line = _EMPHASIS.sub(r"\2", line)
        line = line.strip().strip("*_`").strip()
        line = _LABEL.sub("", line).strip()
        line = _unquote(line)
    return "" if _BARE_LABEL.match(line) else line


def _unquote(text: str) -> str:
    changed = True
    while changed and len(text) >= 2:
        changed = False
        for pair in _QUOTES:
            if text[0] == pair[0] and text[-1] == pair[-1]:
                text, changed = text[1:-1].strip(), True
    return text


def _lines(raw: str) -> list[str]:
    text = _THINK.sub("", raw)
    if "<think>" in text.lower():  # an unclosed reasoning block: nothing after it is the answer
        text = text[: text.lower().index("<think>")]
    text = _FENCE.sub("", text)
    return [line for line in (_clean_line(raw) for raw in text.splitlines()) if line]


def _is_preamble(line: str) -> bool:
    lower = line.lower()
    return line.endswith(":") and (
        re.match(r"(?:here|sure|okay|ok|certainly)\b", lower) is not None
        or "summary" in lower
        or "headline" in lower
    )


def clean_summary(raw: str) -> str:
    """The model's summary as one paragraph of plain text ('' if nothing is left)."""
    lines = _lines(raw)
    if len(lines) > 1 and _is_preamble(lines[0]):
        lines = lines[1:]  # "Here is a summary of the note:"
    return _unquote(" ".join(" ".join(lines).split()))


def clean_headline(raw: str) -> str:
    """The model's headline as one line of plain text ('' if nothing is left)."""
    lines = _lines(raw)
    if len(lines) > 1 and _is_preamble(lines[0]):
        lines = lines[1:]
    if not lines:
        return ""
    headline = _unquote(" ".join(lines[0].split()))
    if len(headline.split()) > _HEADLINE_HARD_LIMIT:
        headline = shorten(headline, 30)
    return headline


# -- choosing a compressor -------------------------------------------------------------------


def compressor_from_name(name: str | None, environ: Mapping[str, str] | None = None) -> Compressor | None:
    """The compressor called ``name``: None for ``extractive`` (``Memory``'s
    default, built on first use with the store's embedder), an
    ``OpenAICompressor`` configured from the environment for ``openai``."""
    key = (name or "extractive").strip().lower()
    if key == "extractive":
        return None
    if key == "openai":
        return OpenAICompressor.from_env(environ)
    raise InvalidParameters(f"unknown compressor {name!r}; use one of {', '.join(COMPRESSOR_NAMES)}.")


# -- small helpers --------------------------------------------------------------------------


def _redact_url(url: str) -> str:
    """The URL without user:password and query string (which may hold a key)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        return HTTPStatus(exc.code).phrase
    except ValueError:
        return str(exc.reason or "")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _check_number(name: str, value: Any, *, low: float, high: float | None = None, low_open: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        bound = f"{'above' if low_open else 'at least'} {low:g}" + (f" and at most {high:g}" if high is not None else "")
        raise InvalidParameters(f"{name} must be a number {bound}, got {value!r}.")


def _check_whole(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidParameters(f"{name} must be a whole number of at least {low}, got {value!r}.")


__all__ = [
    "OpenAICompressor",
    "compressor_from_name",
    "clean_summary",
    "clean_headline",
    "COMPRESSOR_NAMES",
]
