"""A synthetic long multi-session conversation, with questions and their evidence.

Two people chat over 24-32 dated sessions spread across 9-14 months, one
memory per turn, in the shape of public long-conversation memory benchmarks
(LoCoMo and the like), but generated here from a seed: no public data set is
used. Most turns are chit-chat (greetings, reactions, small talk, questions
back); facts about each speaker are woven in: a home city, a job, pets,
family, purchases, trips, injuries, events with dates, goals... Facts are
stated once early or late, repeated later in other words, or changed
(a move, a new job, a renamed pet, a cancelled plan, "actually it's Tuesday").
Distractors sit beside them: the other speaker's facts of the same kind and
third parties' (a friend's trip, a neighbour's dog), all with different
entities.

Each question is paraphrased (it does not copy the turn's wording) and names
the turns a correct answer needs (``evidence``), in one of seven categories:

``single_old``     a fact stated once in the first third of the sessions
``single_recent``  a fact stated once in the last third
``multi_hop``      needs 2-3 turns, usually from different sessions
``temporal``       when did X happen (the answer uses the session date)
``current``        the value after a change (evidence: the change turn)
``before_change``  the value before a change (the original turn and the change turn)
``repeated``       a fact stated 2-3 times (evidence: every turn stating it)

Every entity that answers a question appears in no other turn of its
conversation, and ``Question.keys`` says which string each evidence turn
must contain (``check`` verifies both).

    python benchmarks/conversation.py            # stats and a sample to read
    python benchmarks/conversation.py --seed 3 --conversations 1 --json out.json

Deterministic: the same arguments give byte-identical output (one
``random.Random(seed)`` per conversation; no set or hash order is used).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

CATEGORIES = ("single_old", "single_recent", "multi_hop", "temporal", "current", "before_change", "repeated")


# -- the data model ------------------------------------------------------------


@dataclass
class Turn:
    turn_id: str  # "D3:7": session 3 (1-based), turn 7 (1-based)
    speaker: str
    text: str
    at: datetime


@dataclass
class Session:
    index: int  # 1-based, as in the turn ids
    started_at: datetime
    turns: list[Turn]


@dataclass
class Question:
    qid: str
    text: str
    evidence: list[str]  # turn ids
    category: str
    answer: str
    keys: list[list[str]] = field(default_factory=list)  # [turn_id, string that turn contains]
    speaker: str = ""  # whom the question is about


@dataclass
class Conversation:
    id: str
    speakers: list[str]
    sessions: list[Session]
    questions: list[Question]
    # turn id -> the fact statements said in that turn, verbatim (a turn may join them with small talk):
    # what the retrieval benchmark's "read" metric looks for
    facts: dict[str, list[str]] = field(default_factory=dict)

    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]

    def turn_index(self) -> dict[str, Turn]:
        return {turn.turn_id: turn for turn in self.turns()}


def to_json(conversations: Sequence[Conversation]) -> str:
    def encode(value: Any) -> Any:
        if isinstance(value, datetime):
            return value.isoformat()
        raise TypeError(type(value))

    return json.dumps([asdict(c) for c in conversations], default=encode, indent=1, ensure_ascii=False)


def from_json(text: str) -> list[Conversation]:
    out = []
    for c in json.loads(text):
        sessions = [
            Session(
                index=s["index"],
                started_at=datetime.fromisoformat(s["started_at"]),
                turns=[Turn(t["turn_id"], t["speaker"], t["text"], datetime.fromisoformat(t["at"])) for t in s["turns"]],
            )
            for s in c["sessions"]
        ]
        questions = [Question(**q) for q in c["questions"]]
        out.append(Conversation(c["id"], list(c["speakers"]), sessions, questions, {k: list(v) for k, v in c.get("facts", {}).items()}))
    return out


# -- pools ----------------------------------------------------------------------

FEMALE = [
    "Maya", "Priya", "Elena", "Sofia", "Hannah", "Chloe", "Amara", "Ingrid", "Lucia", "Nadia",
    "Rosa", "Grace", "Yuki", "Fatima", "Leah", "Zoe", "Clara", "Tessa", "Imogen", "Noor",
    "Bea", "Marta", "Keira", "Alina", "Joanna", "Freya", "Paloma", "Ruth", "Selin", "Vera",
    "Harriet", "Celeste", "Dana", "Esme", "Gwen", "Ivy", "Lorna", "Mei", "Nell", "Odette",
]
MALE = [
    "Jon", "Marco", "Theo", "Samir", "Daniel", "Oscar", "Kenji", "Luis", "Felix", "Tomas",
    "Rafael", "Owen", "Ibrahim", "Nikolai", "Ben", "Arjun", "Callum", "Diego", "Emil", "Hugo",
    "Isaac", "Jasper", "Kofi", "Leon", "Mateo", "Nate", "Pavel", "Quinn", "Rory", "Stefan",
    "Tobias", "Victor", "Wes", "Aziz", "Bruno", "Cyrus", "Dev", "Ezra", "Finn", "Gabe",
]
TOWNS = [
    "Millbrook", "Ashford Falls", "Cedar Hollow", "Port Alder", "Kettleby", "Wrenfield", "Hollins Creek",
    "Stonebridge", "Larkspur", "Foxley", "Marrow Bay", "Eastwick", "Pine Ridge", "Thornbury",
    "Saltmarsh", "Oldcastle", "Briar Glen", "Copper Flats", "Willowmere", "Harlow Point",
    "Elmstead", "Greyhaven", "Northby", "Redcliff", "Sandhurst", "Tamsworth", "Upton Vale",
]
CITIES = [
    "Portland", "Denver", "Austin", "Chicago", "Seattle", "Boston", "Toronto", "Vancouver",
    "Melbourne", "Dublin", "Edinburgh", "Manchester", "Minneapolis", "Pittsburgh", "Nashville",
    "San Diego", "Philadelphia", "Atlanta", "Montreal", "Wellington", "Auckland", "Bristol",
    "Leeds", "Glasgow", "Baltimore", "Sacramento", "Raleigh", "Madison", "Boulder", "Richmond",
    "Calgary", "Adelaide", "Brisbane", "Cardiff", "Halifax", "Tucson",
]
HOODS = [
    "right by the river", "near the old train station", "in a flat above a bakery", "next to a huge park",
    "in a quiet cul-de-sac", "close to the university", "on a really steep hill", "near the harbour",
    "in a converted warehouse", "two streets from the market",
]
DESTINATIONS = [
    "Lisbon", "Kyoto", "Reykjavik", "Marrakech", "Cape Town", "Hanoi", "Oaxaca", "Tbilisi", "Crete",
    "Sicily", "Patagonia", "the Faroe Islands", "Bali", "Quebec City", "Prague", "Vienna", "Budapest",
    "Seoul", "Tasmania", "the Scottish Highlands", "Santorini", "Istanbul", "Buenos Aires",
    "Cartagena", "Zanzibar", "Banff", "the Amalfi Coast", "Porto", "Krakow", "Ljubljana",
    "Mexico City", "Taipei", "Queenstown", "Copenhagen", "Seville", "Valparaiso", "Hokkaido",
]
EMPLOYERS = [
    "Brightwave Analytics", "Northwind Logistics", "Halcyon Health", "Copperleaf Studios", "Bluestem Bank",
    "Ironbridge Engineering", "Marigold Foods", "Tidewater Labs", "Summit Outdoor Co", "Lumen Education",
    "Greenhaven Hospital", "Pinecrest Software", "Redline Transit", "Silverline Insurance",
    "Harborview Clinic", "Kestrel Robotics", "Juniper Media", "Foxglove Architects", "Stonegate Construction",
    "Clearwater Energy", "Meridian Travel", "Quarry Hill School", "Nimbus Games", "Vantage Pharma",
    "Atlas Freight", "Cobalt Security", "Wildflower Bakery", "Orchard Street Dental", "Lantern Books",
    "Skyline Telecom", "Evergreen Credit Union", "Palisade Consulting",
]
ROLES = [
    "nurse", "software developer", "graphic designer", "high school teacher", "accountant", "paramedic",
    "line cook", "project manager", "data analyst", "physiotherapist", "electrician", "marketing coordinator",
    "pharmacist", "librarian", "UX researcher", "veterinary technician", "sales rep", "civil engineer",
    "HR specialist", "copy editor", "lab technician", "architect", "social worker", "dental hygienist",
]
PETS = {
    "dog": ["beagle", "golden retriever", "border collie", "corgi", "dachshund", "greyhound", "labrador",
            "husky", "shiba inu", "boxer", "whippet", "poodle mix", "cocker spaniel", "terrier mix"],
    "cat": ["tabby", "Maine Coon", "Siamese", "ragdoll", "Bengal", "Persian", "tortoiseshell", "Russian Blue",
            "Sphynx", "calico"],
    "rabbit": ["lop-eared rabbit", "Netherland dwarf rabbit", "lionhead rabbit"],
    "parrot": ["cockatiel", "budgie", "African grey", "lovebird"],
}
PET_NAMES = [
    "Biscuit", "Pickle", "Mochi", "Juniper", "Waffles", "Ziggy", "Pepper", "Clementine", "Otis", "Luna",
    "Bramble", "Nacho", "Toffee", "Pixel", "Marlowe", "Hazel", "Gizmo", "Sprout", "Kiwi", "Moose",
    "Noodle", "Scout", "Olive", "Pretzel", "Rocket", "Sushi", "Tofu", "Banjo", "Maple", "Dumpling",
    "Echo", "Fig", "Gus", "Indie", "Jellybean", "Koda", "Lentil", "Mango", "Nutmeg", "Poppy",
    "Radish", "Socks", "Tater", "Umber", "Velvet", "Wombat", "Yeti", "Zephyr", "Crumpet", "Doodle",
]
FEMALE_RELS = ["sister", "cousin", "aunt", "niece", "mum", "grandma", "sister-in-law", "best friend", "stepsister",
               "godmother", "oldest friend", "flatmate"]
MALE_RELS = ["brother", "cousin", "uncle", "nephew", "dad", "grandpa", "brother-in-law", "best friend", "stepbrother",
             "godfather", "oldest friend", "flatmate"]
FAM_JOBS = [
    "firefighter", "dentist", "commercial pilot", "carpenter", "wedding photographer", "midwife", "park ranger",
    "pastry chef", "divorce lawyer", "plumber", "flight attendant", "zookeeper", "court translator",
    "car mechanic", "police officer", "florist", "long-haul truck driver", "yoga instructor", "tattoo artist",
    "marine biologist", "air traffic controller", "piano tuner", "beekeeper", "locksmith",
]
BANDS = [
    "Velvet Static", "Northern Lanterns", "The Copper Owls", "Saltwater Choir", "Midnight Orchard",
    "Glass Harbor", "The Wandering Keys", "Neon Meadow", "Hollow Pines", "The Lucky Sevens",
    "Paper Satellites", "Ember and Ash", "Blue Verandah", "The Quiet Radios", "Marble Arcade",
    "The Fox Lanes", "Driftwood Radio", "Silver Tides", "Kite Season", "Lowland Hum",
]
OWN_BANDS = [
    "Rusty Hinges", "The Late Bloomers", "Basement Echo", "Second Breakfast", "The Night Shift Trio",
    "Loose Gravel", "Dog-Eared Pages", "The Thursday Club", "Porch Light", "Static Kittens",
]
BOOKS = [
    ("The Lighthouse Keeper's Daughter", "Mara Ellison"), ("Salt and Silence", "Tomas Brandt"),
    ("A Map of Small Hours", "Ines Calder"), ("The Orchard at Dusk", "Peter Vance"),
    ("Winter Tenants", "Ruth Okafor"), ("The Clockmaker's Apprentice", "Dev Rao"),
    ("Paper Moons", "Lena Fischer"), ("The Last Ferry Home", "Sam Whitlock"),
    ("Borrowed Gardens", "Aiko Tanabe"), ("Rivers Under Glass", "Miguel Santos"),
    ("The Cartographer's Wife", "Helen Marsh"), ("Quiet Engines", "Oskar Lind"),
    ("The Honey Thief", "Nadia Farouk"), ("North of Nowhere", "Jack Conley"),
    ("Small Fires", "Priya Nair"), ("The Glass Orchard", "Elena Petrova"),
    ("Tin Crowns", "Marcus Bell"), ("A Season of Foxes", "Clara Dunne"),
]
DISHES = [
    "shakshuka", "pad see ew", "mushroom risotto", "katsu curry", "pierogi", "pho", "lamb tagine",
    "fish tacos", "butter chicken", "bibimbap", "spanakopita", "tonkotsu ramen", "gnocchi",
    "jollof rice", "seafood paella", "laksa", "enchiladas", "pork dumplings", "moussaka", "khachapuri",
]
ALLERGENS = [
    "shellfish", "peanuts", "penicillin", "bee stings", "kiwi fruit", "sesame", "ragweed pollen",
    "latex", "strawberries", "dust mites", "horses", "mustard",
]
INSTRUMENTS = [
    "cello", "ukulele", "banjo", "trumpet", "saxophone", "violin", "drum kit", "mandolin",
    "harmonica", "bass guitar", "flute", "accordion", "harp", "clarinet",
]
LANGUAGES = [
    "Portuguese", "Japanese", "Italian", "Korean", "German", "Mandarin", "Greek", "Dutch", "Swedish",
    "Arabic", "Turkish", "Polish", "Welsh", "Hindi", "Icelandic",
]
SHOWS = [
    "Harbor Lights", "The Long Con", "Dust and Thunder", "Kitchen Nightshift", "Glacier Station",
    "The Quiet Detective", "Paper Crowns", "Starlight Motel", "Wildwood County", "The Understudy",
    "Signal Lost", "Crown and Anchor", "Deep Field", "Brass Knuckle Bay",
]
# (item as said, item as asked, brands)
PURCHASES = [
    ("espresso machine", "coffee maker", ["Breville", "Gaggia", "Rancilio"]),
    ("road bike", "new bicycle", ["Cannondale", "Bianchi", "Specialized"]),
    ("e-reader", "device for ebooks", ["Kobo", "PocketBook"]),
    ("robot vacuum", "automatic floor cleaner", ["Roborock", "Eufy"]),
    ("standing desk", "adjustable desk", ["Uplift", "Flexispot"]),
    ("tent", "camping shelter", ["Big Agnes", "Nemo"]),
    ("pair of trail runners", "running shoes", ["Hoka", "Salomon", "Altra"]),
    ("stand mixer", "kitchen mixer", ["KitchenAid", "Kenwood"]),
    ("kayak", "boat", ["Perception", "Wilderness Systems"]),
    ("smartwatch", "fitness watch", ["Garmin", "Coros"]),
    ("air fryer", "countertop fryer", ["Ninja", "Cosori"]),
    ("sewing machine", "machine for sewing", ["Janome", "Bernina"]),
    ("telescope", "stargazing scope", ["Celestron", "Sky-Watcher"]),
    ("pizza oven", "outdoor oven", ["Ooni", "Gozney"]),
    ("drone", "camera drone", ["DJI", "Autel"]),
    ("electric scooter", "e-scooter", ["Segway", "Xiaomi"]),
]
INJURIES = [
    ("sprained my ankle", "ankle", "playing five-a-side football", "football"),
    ("broke my wrist", "wrist", "ice skating with my nephew", "ice skating"),
    ("pulled a muscle in my back", "back", "helping a friend move a piano", "piano"),
    ("cracked a rib", "ribs", "mountain biking down a rocky trail", "mountain biking"),
    ("twisted my knee", "knee", "skiing on the last day of the season", "skiing"),
    ("burned my hand", "hand", "grabbing a cast iron pan straight out of the oven", "cast iron pan"),
    ("dislocated my shoulder", "shoulder", "surfing in pretty big waves", "surfing"),
    ("needed five stitches in my thumb", "thumb", "carving a pumpkin with a bread knife", "pumpkin"),
    ("chipped a front tooth", "tooth", "biting into a frozen chocolate bar", "frozen chocolate bar"),
    ("bruised my tailbone", "tailbone", "falling off a paddleboard", "paddleboard"),
    ("sliced my finger open", "finger", "cutting a frozen bagel", "bagel"),
    ("strained my neck", "neck", "sleeping sitting up on a night bus", "night bus"),
    ("broke my little toe", "toe", "walking into the bed frame in the dark", "bed frame"),
    ("got a black eye", "eye", "playing dodgeball at a work party", "dodgeball"),
    ("tore a calf muscle", "calf", "sprinting for a train", "sprinting for a train"),
]
RESTAURANTS = [
    "Casa Lumbre", "The Copper Pot", "Little Tbilisi", "Nonna's Table", "Blue Lotus", "Saffron House",
    "The Hungry Heron", "Maison Verte", "Golden Ladle", "Fig and Olive", "Smoke and Barrel", "Ramen Ryu",
    "El Faro", "The Gilded Spoon", "Kasbah Rose", "Seoul Garden",
]
CUISINES = [
    ("Ethiopian", "Ethiopian"), ("Georgian", "Georgian"), ("Peruvian", "Peruvian"), ("Sri Lankan", "Sri Lankan"),
    ("Lebanese", "Lebanese"), ("Basque", "Basque"), ("Vietnamese", "Vietnamese"), ("Oaxacan", "Mexican"),
    ("Sichuan", "Chinese"), ("Burmese", "Burmese"), ("Filipino", "Filipino"), ("Moroccan", "North African"),
]
# (how the speaker describes the coworker, how a question describes them)
QUIRKS = [
    ("brings homemade sourdough in every Friday", "bakes bread for the office"),
    ("has run something like twelve marathons", "is a serious long-distance runner"),
    ("keeps a tarantula in a tank on their desk", "keeps a pet spider at work"),
    ("speaks five languages and still apologises for his accent", "is a polyglot"),
    ("plays in a heavy metal band on weekends", "is in a metal band"),
    ("knits during every single meeting", "does needlework in meetings"),
    ("cycles forty kilometres to work every day", "commutes by bike from far away"),
    ("used to be a professional chess player", "was once a chess pro"),
    ("grows chillies under grow lights in the stockroom", "farms peppers indoors at the office"),
    ("does stand-up comedy at open mic nights", "performs comedy on the side"),
    ("has been to every country in South America", "has travelled all over that continent"),
    ("restores old motorbikes in his garage", "fixes up vintage motorcycles"),
    ("brings a greyhound to the office every day", "has a dog at work"),
    ("owns about four hundred mugs and rotates them", "collects coffee cups"),
    ("once won a car on a TV quiz show", "was a game show contestant"),
    ("builds ships in bottles during lunch", "makes tiny models in glass"),
    ("swims in the sea every morning, even in January", "takes cold-water dips daily"),
]
GOALS = [
    ("save enough for a deposit on a flat by next summer", "What is {who} putting money aside for?", "deposit on a flat"),
    ("swim across the lake at the charity event in August", "What open-water challenge is {who} training for?", "swim across the lake"),
    ("read fifty books before the end of the year", "How many books does {who} want to get through this year?", "fifty books"),
    ("get my pilot's licence within two years", "What kind of licence is {who} hoping to earn?", "pilot's licence"),
    ("finish writing the first draft of my novel by spring", "What creative writing project does {who} want to complete?", "novel"),
    ("hike the whole coastal path, all six hundred miles of it", "Which long-distance walk does {who} aim to complete?", "coastal path"),
    ("pass the sommelier exam", "Which wine qualification is {who} working towards?", "sommelier"),
    ("open my own little pottery studio", "What kind of business does {who} dream of starting?", "pottery studio"),
    ("learn to do a proper handstand before I turn forty", "What gymnastics skill is {who} trying to master?", "handstand"),
    ("visit every national park in the country", "What travel mission has {who} set themselves?", "every national park"),
    ("run a marathon in under four hours", "What finishing time is {who} chasing in a 26-mile race?", "under four hours"),
    ("become fluent enough to read newspapers without a dictionary", "What reading goal does {who} have for their language study?", "newspapers"),
]
VOLUNTEER = [
    "animal shelter", "food bank", "community garden", "children's hospital", "adult literacy charity",
    "soup kitchen", "wildlife rescue centre", "refugee welcome centre", "hospice", "repair cafe",
    "city farm", "library homework club",
]
GIFTS = [
    "vintage typewriter", "hand-knitted blanket", "record player", "cast iron skillet", "pair of binoculars",
    "leather journal", "bonsai tree", "hot air balloon voucher", "framed star map", "sourdough starter kit",
    "polaroid camera", "weighted blanket", "chess set carved from olive wood",
]
DRINKS = [
    "oat flat white", "iced chai latte", "cortado", "matcha latte", "double espresso", "rooibos tea",
    "cold brew with a splash of milk", "hot chocolate with chilli", "London fog", "turmeric latte",
]
VEG = [
    "cherry tomatoes", "chillies", "courgettes", "strawberries", "kale", "pumpkins", "runner beans",
    "sweetcorn", "aubergines", "garlic", "rhubarb", "butternut squash",
]
CARS = [
    "Honda Civic", "Subaru Outback", "Volkswagen Golf", "Toyota Prius", "Mazda MX-5", "Ford Fiesta",
    "Volvo estate", "Kia Niro", "Nissan Leaf", "Mini Cooper", "Jeep Wrangler", "Skoda Octavia",
    "Tesla Model 3", "Fiat Panda", "Land Rover Defender", "Hyundai Ioniq",
]
SPORTS = [
    ("rowing", "rowing club"), ("climbing", "climbing gym"), ("fencing", "fencing club"),
    ("ultimate frisbee", "ultimate frisbee team"), ("roller derby", "roller derby league"),
    ("water polo", "water polo team"), ("badminton", "badminton club"), ("jiu-jitsu", "jiu-jitsu gym"),
    ("archery", "archery club"), ("netball", "netball team"), ("table tennis", "table tennis club"),
    ("cricket", "cricket club"), ("boxing", "boxing gym"), ("volleyball", "volleyball league"),
]
SUBJECTS = [
    "accounting", "interior design", "web development", "psychology", "carpentry", "nutrition",
    "photography", "marine biology", "law", "landscape architecture", "animation", "midwifery",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
OCCASIONS = [
    ("recital", "piano recital", "recital"), ("graduation", "graduation ceremony", "graduation"),
    ("housewarming", "housewarming party", "housewarming"), ("school play", "school play", "play"),
    ("book launch", "book launch", "launch"), ("retirement party", "retirement do", "retirement"),
    ("christening", "christening", "christening"), ("art show", "art show opening", "art show"),
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
# Temporal events: (key, how said, how asked)
RACES = [
    ("Riverside Half Marathon", "the Riverside Half Marathon", "Riverside half"),
    ("Harbour 10K", "the Harbour 10K", "harbour ten-kilometre race"),
    ("Midnight Trail Run", "the Midnight Trail Run", "night-time trail race"),
    ("Color Dash", "the Color Dash fun run", "paint-throwing fun run"),
    ("Big Hill Sprint Triathlon", "the Big Hill Sprint Triathlon", "sprint triathlon"),
    ("Turkey Trot", "the Turkey Trot 5K", "Thanksgiving five-kilometre run"),
]
WORKSHOPS = [
    ("pottery", "a pottery workshop", "ceramics class"), ("woodworking", "a woodworking workshop", "carpentry class"),
    ("sushi", "a sushi-rolling workshop", "Japanese cooking class"), ("letterpress", "a letterpress printing workshop", "printing class"),
    ("stained glass", "a stained glass workshop", "glass art class"), ("beekeeping", "a beekeeping taster day", "bee course"),
    ("bookbinding", "a bookbinding workshop", "class on making books"), ("foraging", "a mushroom foraging walk", "guided mushroom hunt"),
    ("glassblowing", "a glassblowing class", "class on blowing glass"), ("candle", "a candle-making workshop", "class on making candles"),
]
MILESTONES = [
    ("wisdom teeth", "had my wisdom teeth taken out", "have their wisdom teeth removed"),
    ("driving test", "passed my driving test, third time lucky", "pass their driving exam"),
    ("first tattoo", "got my first tattoo, a tiny fern on my wrist", "get their first tattoo"),
    ("citizenship", "had my citizenship ceremony", "become a citizen"),
    ("scuba", "did my first proper scuba dive", "go diving for the first time"),
    ("blood", "gave blood for the first time", "donate blood for the first time"),
    ("skydive", "did a tandem skydive", "jump out of a plane"),
    ("sailing lesson", "took my first sailing lesson", "have their first lesson on a sailboat"),
    ("eye surgery", "had laser eye surgery", "get their eyes lasered"),
    ("black belt", "got my black belt in karate", "earn a karate black belt"),
]
PARTIES = [
    ("fancy dress", "a fancy dress party", "host a costume party"), ("karaoke", "a karaoke night at my place", "host a singing night at home"),
    ("six-course", "a six-course dinner party", "cook a big dinner for friends"), ("quiz night", "a quiz night for the neighbours", "run a trivia evening"),
    ("murder mystery", "a murder mystery evening", "host a whodunnit game night"), ("clothes swap", "a clothes swap party", "organise a swap of old clothes"),
    ("board game marathon", "a board game marathon", "host a long games session"), ("pancake", "a pancake brunch for twenty people", "feed a crowd at brunch"),
]
MOUNTAINS = [
    "Mount Tallow", "Ben Corrie", "Eagle Peak", "Grey Tor", "Mount Ashby", "Pike Crag", "Sentinel Rock",
    "Mount Hollis", "Raven Fell", "Cinder Cone",
]
CAMPSITES = ["Lake Wendover", "Pine Hollow", "Crescent Bay", "Fernside Woods", "Otter Creek", "Juniper Flats"]
HIGHLIGHTS = [
    ("a sunrise hot air balloon ride", "balloon"), ("a cooking class with a local grandmother", "cooking class"),
    ("snorkelling with sea turtles", "turtles"), ("a night at a tiny mountain hut", "mountain hut"),
    ("a food tour that lasted six hours", "food tour"), ("kayaking through sea caves", "sea caves"),
    ("a thermal bath under the stars", "thermal bath"), ("an overnight train through the mountains", "overnight train"),
    ("a jazz bar that only opens after midnight", "jazz bar"), ("seeing the northern lights", "northern lights"),
    ("a horseback ride along the beach", "horseback"), ("a whale watching boat", "whale"),
]
PROJECTS = [
    ("treehouse", "treehouse"), ("bookshelf", "bookcase"), ("canoe", "wooden canoe"), ("garden shed", "shed"),
    ("dining table", "table"), ("chicken coop", "coop for hens"), ("quilt", "patchwork quilt"),
    ("campervan conversion", "camper van"), ("ukulele", "homemade ukulele"), ("greenhouse", "greenhouse"),
]
COLOURS = ["sage green", "mustard yellow", "navy blue", "terracotta", "duck-egg blue", "burgundy", "charcoal grey", "coral pink"]


# -- helpers --------------------------------------------------------------------


def a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


class Picker:
    """Draws entities so that no value is used twice in one conversation."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()  # membership only: never iterated

    @staticmethod
    def _key(value: Any) -> str:
        return (value if isinstance(value, str) else value[0]).lower()

    def one(self, pool: Sequence[Any]) -> Any:
        free = [v for v in pool if self._key(v) not in self.used]
        if not free:
            raise RuntimeError(f"pool exhausted: {pool[:3]}...")
        value = self.rng.choice(free)
        self.used.add(self._key(value))
        return value

    def free(self, pool: Sequence[Any]) -> int:
        return sum(1 for v in pool if self._key(v) not in self.used)

    def claim(self, value: str) -> None:
        self.used.add(value.lower())


class Slots(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(f"template slot {{{key}}} not filled")


def fill(template: str, slots: dict[str, Any]) -> str:
    return template.format_map(Slots(slots))


def fmt_date(d: datetime) -> str:
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def words(text: str) -> int:
    return len(text.split())


# Leads and tails around a statement, for length and variety.
LEADS = [
    "", "", "", "", "", "Oh, guess what! ", "So, news from my end: ", "Not sure if I mentioned it, but ",
    "Okay so ", "Random update: ", "Honestly, ", "Well, ", "Oh! Before I forget, ", "Ha, funny you ask. ",
    "You'll laugh, but ", "Big news, sort of. ", "Small update: ", "Right, so ", "Can I just say, ",
    "Speaking of which, ", "Oh man, where do I start. ",
]
TAILS = [
    " Still can't quite believe it.", " Anyway, how are things with you?", " Life, huh.",
    " It's been a week, honestly.", " What about you?", " I'll tell you more next time.", " Wild, right?",
    " Anyway, enough about me.", " Let's see how it goes.", " That's my news, anyway.",
    " Not the most exciting, I know.", " Anyway, how's your week been?", " Sorry, I'm rambling.",
    " So that's been my week.", " What's new with you?", " I keep thinking about it.",
]


# Words that start a statement and are not names: lowered after a lead like "Honestly, ".
_COMMON_STARTS = set("""
A After Another Any Anyway As At Baby Back Being Best Big Bit Book Booked Bought Change Correction Did Dinner Done
Don't Everyone Every Finished First Fun Funny Going Good Got Guess Had Have Home Honestly Huge If It It's Last Learning
Left Life Like Look Made Meet Moving Mum My Name New Next No Not Nothing Now Okay On Oops Our Plot Quit Random
Rebrand Rehearsal Remember Rent Said Signed Since Small So Someone Spent Squirrels Still Stayed Studying Sunday Saturday
Took Traded Treated Tried Turns That That's The There There's Things This Three Two Wait We We're We've Went Whenever
Yesterday You You'll Your Thinking Hope Fingers Meet Correction Oops Present He's Ugh
""".split()) | {s.capitalize() for s, _ in SPORTS} | {s.split(" ")[0].capitalize() for s in SUBJECTS}


def decap(sentence: str) -> str:
    """The sentence with its first letter lowered when its first word is a common one (not a name, not "I")."""
    first = sentence.split(" ", 1)[0].rstrip(",.!?:")
    if first in _COMMON_STARTS:
        return sentence[0].lower() + sentence[1:]
    return sentence


def wrap(rng: random.Random, sentence: str, lead_p: float = 0.5, tail_p: float = 0.3) -> str:
    lead = rng.choice(LEADS) if rng.random() < lead_p else ""
    tail = rng.choice(TAILS) if rng.random() < tail_p else ""
    if lead and lead[-2] not in ".!?:":
        sentence = decap(sentence)
    return (lead + sentence + tail).strip()


# Per-topic conversation around a fact: what the partner asks first, how they
# react, what the owner adds (no key values), how the partner relates.
TOPICS: dict[str, dict[str, list[str]]] = {
    "home": {
        "ask": ["How's the new place treating you?", "Are you still liking where you live?", "How's life at home?",
                "What's the neighbourhood like these days?", "Any news on the home front?"],
        "react": ["Oh, that sounds lovely.", "Wow, big change!", "Ooh, I've always wanted to visit there.",
                  "Is it expensive? Everywhere seems to be these days.", "That's a proper adventure.",
                  "Do you miss anything about before?", "Nice! Is the commute okay?"],
        "detail": ["The rent is a bit steep, but the light in the mornings is worth it.",
                   "Took me weeks to unpack the last boxes, they're still in the hallway honestly.",
                   "The neighbours are friendly, one of them brought over a lemon cake.",
                   "There's a farmers market on Sundays, which I love.",
                   "It's quieter than I expected. I actually sleep through the night now.",
                   "Parking is a nightmare though, don't get me started."],
        "relate": ["I keep thinking about moving somewhere smaller myself.",
                   "Our street is so noisy at night, I'm a bit jealous.",
                   "I've lived in the same place for six years now, it's getting old.",
                   "Moving is the worst. I swore after last time I'd never do it again."],
    },
    "work": {
        "ask": ["How's work going?", "Busy at work?", "How's the job?", "Still enjoying work?",
                "What's new with work stuff?"],
        "react": ["Ha, every office needs one of those.", "Oh nice, how's the team otherwise?", "That sounds like a lot.",
                  "Work people are a whole world, aren't they?", "Ha, I can't imagine you anywhere else.",
                  "Honestly, that sounds better than my place.", "Oh, that's big news on the work front!"],
        "detail": ["The first week was a blur of passwords and onboarding videos.",
                   "My manager seems decent so far, which is half the battle.",
                   "There's free coffee, which has already changed my life.",
                   "The hours are long, but I like the people a lot.",
                   "I had to give a presentation on day three, I was shaking.",
                   "Everyone eats lunch together, which is nice but exhausting for an introvert."],
        "relate": ["Work's been a grind for me lately, so good to hear something positive.",
                   "I'm thinking about a change too, honestly.",
                   "Our office just switched to hot desks and everyone is furious.",
                   "My boss keeps scheduling meetings at 5pm, it drives me up the wall."],
    },
    "pets": {
        "ask": ["How are the animals?", "Any pet news?", "How's the furball?", "Tell me about the little one!"],
        "react": ["Aww, I need pictures immediately.", "Stop, that's adorable.", "Oh my gosh, I'm so jealous.",
                  "That's the cutest thing I've heard all week.", "Ha! Pets are so weird.",
                  "How is it settling in?", "Please send me a video."],
        "detail": ["It already sleeps on my pillow, which I swore I wouldn't allow.",
                   "The vet says it's healthy, just a bit underweight.",
                   "It chewed through a phone charger on the first night.",
                   "It follows me around the flat like a shadow.",
                   "We spent a fortune on toys and it only plays with a cardboard box.",
                   "Training is going slowly, but we're getting there."],
        "relate": ["I grew up with animals, I miss having one around.",
                   "My landlord won't allow pets, it's so unfair.",
                   "We fostered a couple of kittens once, it was chaos.",
                   "I'm more of a plant person, they don't need walking."],
    },
    "family": {
        "ask": ["How's the family?", "How are your folks doing?", "Any family news?", "How's everyone at home?"],
        "react": ["Oh, that's wonderful news!", "Aw, give them my best.", "Family stuff, always something.",
                  "That's so sweet.", "Wow, how are they feeling about it?", "Congratulations to them!"],
        "detail": ["We're all getting together at my parents' place next month.",
                   "The group chat has been unbearable since, in a good way.",
                   "Mum cried, obviously. She cries at adverts.",
                   "I haven't seen them in person since the holidays, which feels too long.",
                   "We've always been close, even when we fought as kids."],
        "relate": ["My family is spread all over, we barely manage a video call.",
                   "My cousins and I are terrible at keeping in touch.",
                   "That reminds me, I owe my mum a call.",
                   "Big families are great until you have to plan a dinner."],
    },
    "travel": {
        "ask": ["Any trips coming up?", "Going anywhere nice this year?", "Have you been travelling lately?",
                "Got any holidays planned?"],
        "react": ["Ooh, jealous!", "That sounds amazing, I've never been.", "Oh, I hear the food there is unreal.",
                  "How long are you going for?", "Take loads of photos!", "What's the plan once you're there?"],
        "detail": ["The flights were cheaper than I expected, so I jumped on it.",
                   "I've got a spreadsheet already, don't judge me.",
                   "We're staying in a little guesthouse run by a retired couple.",
                   "Mostly I just want to walk around and eat things.",
                   "I'm trying not to overplan this time."],
        "relate": ["I haven't been on a proper holiday in two years.",
                   "My passport expired and I keep forgetting to renew it.",
                   "I'm saving up for a big trip next year, fingers crossed.",
                   "I get terrible jet lag, so I mostly stay close to home."],
    },
    "health": {
        "ask": ["How are you feeling these days?", "How's the body holding up?", "You doing okay?",
                "Everything alright health-wise?"],
        "react": ["Ouch! Are you okay?", "Oh no, that sounds painful.", "Take it easy, seriously.",
                  "That's awful, I'm sorry.", "Yikes. How long until you're back to normal?",
                  "Oh no! Did you have to go to hospital?"],
        "detail": ["The doctor says six weeks of rest and then we'll see.",
                   "I'm mostly annoyed that I can't do anything fun.",
                   "Painkillers help, but sleeping is awkward.",
                   "It's already feeling a bit better, to be fair.",
                   "Lesson learned, I suppose. Or not, knowing me."],
        "relate": ["I did something similar years ago, it takes ages to heal.",
                   "I've been meaning to get a check-up myself.",
                   "Be careful, those things can nag for years.",
                   "My physio says most injuries are just bad luck and bad shoes."],
    },
    "hobbies": {
        "ask": ["What have you been up to for fun?", "Doing anything fun lately?", "How do you spend your evenings now?",
                "Picked up any new hobbies?"],
        "react": ["That's so cool!", "Oh I'd love to try that.", "You're always learning something new.",
                  "How did you get into that?", "Is it hard?", "I'm impressed, honestly.", "Ha, I can totally see you doing that."],
        "detail": ["I practise for half an hour every evening, more if I can.",
                   "The teacher is very patient, thank goodness.",
                   "I'm terrible at it, but I'm having fun.",
                   "There's a group that meets on Thursdays, everyone's really welcoming.",
                   "It's the only thing that gets me off my phone."],
        "relate": ["I tried something like that once and gave up after a week.",
                   "I need a hobby that isn't scrolling, seriously.",
                   "My weekends are all chores at the moment.",
                   "I keep buying craft supplies and never using them."],
    },
    "media": {
        "ask": ["Read or watched anything good lately?", "What are you into at the moment?", "Any recommendations?",
                "Listening to anything good?"],
        "react": ["Ooh, I'll add it to my list.", "I've heard good things about that!", "Never heard of it, tell me more.",
                  "Is it sad? I can't do sad right now.", "Nice, I need something new.", "You always have the best taste."],
        "detail": ["I stayed up until two in the morning, which I regret.",
                   "The ending is a bit rushed, but the middle is perfect.",
                   "It's one of those things you keep thinking about days later.",
                   "I've told basically everyone about it."],
        "relate": ["I've been rewatching the same old comfort stuff, honestly.",
                   "I can't focus on anything longer than a podcast lately.",
                   "I started three things this month and finished none.",
                   "My partner and I can never agree on what to watch."],
    },
    "food": {
        "ask": ["Eaten anything good lately?", "What have you been cooking?", "Tried anywhere new to eat?",
                "What's for dinner tonight?"],
        "react": ["Now I'm hungry.", "Oh yum.", "I need the address!", "You're making me want to cook.",
                  "That sounds delicious.", "Ha, I'm having cereal for dinner tonight."],
        "detail": ["We went back twice in one week, which is a bit embarrassing.",
                   "The portions are huge, bring a big appetite.",
                   "I tried making it at home and it was a disaster.",
                   "It's cheap too, which is rare these days."],
        "relate": ["I'm stuck in a pasta rut, every night the same thing.",
                   "I really need to cook more and order less.",
                   "There's nowhere good to eat near me, it's all chains.",
                   "I've been meal prepping on Sundays, it's a game changer."],
    },
    "shopping": {
        "ask": ["Bought anything fun recently?", "Any big purchases?", "Treat yourself to anything lately?"],
        "react": ["Ooh, fancy!", "Was it expensive?", "Nice, you deserve it.", "Is it worth the money?",
                  "I've been eyeing one of those for ages.", "Ha, retail therapy?"],
        "detail": ["I read about forty reviews before deciding, classic me.",
                   "It was on sale, so I could justify it.",
                   "I already use it every single day.",
                   "Setting it up took a whole Saturday afternoon."],
        "relate": ["I'm on a no-spend month, so I'm living through you.",
                   "I always regret the big purchases I make impulsively.",
                   "I've been trying to buy second-hand more.",
                   "My flat is too small for anything new, sadly."],
    },
    "events": {
        "ask": ["How was your weekend?", "Do anything fun recently?", "What did you get up to?", "How was your week?"],
        "react": ["That sounds incredible!", "No way, how was it?", "Wow, well done!", "So fun!",
                  "I'm so proud of you.", "Did you get photos?", "Was it as good as you hoped?"],
        "detail": ["I'm still buzzing from it, honestly.", "I was so nervous beforehand, for no reason as it turned out.",
                   "I took about three hundred photos, most of them blurry.", "I went with a couple of friends, which helped.",
                   "I'd absolutely do it again.", "I told my mum and she made me tell the whole story twice."],
        "relate": ["My weekend was laundry and a nap, so that beats mine.",
                   "I've always wanted to do something like that.",
                   "I need to get out of the house more.",
                   "That reminds me I haven't done anything fun in weeks."],
    },
    "past": {
        "ask": ["Where did you grow up, again?", "Are you going home for the holidays?", "Do you ever go back to where you grew up?"],
        "react": ["Aw, that sounds idyllic.", "Do you ever miss it?", "Ha, small towns are something else.", "I had no idea!",
                  "How often do you go back?"],
        "detail": ["We used to ride our bikes to the lake every summer.", "My whole class at school was twelve kids.",
                   "Everyone's parents knew everyone's parents, so you couldn't get away with anything.",
                   "I still have a couple of friends there from primary school."],
        "relate": ["I grew up in the suburbs, nothing ever happened.", "We moved around so much I don't really have a hometown.",
                   "The place I grew up has changed so much I barely recognise it."],
    },
    "goals": {
        "ask": ["What are you working towards these days?", "Any big goals this year?", "What's the plan for the year?"],
        "react": ["That's ambitious, I love it.", "You'll totally do it.", "How are you going to fit that in?",
                  "Go for it!", "Let me know if you need a cheerleader."],
        "detail": ["I've made a plan and stuck it on the fridge.", "I'm tracking everything in an app now.",
                   "Some weeks are better than others.", "I told everyone so I can't back out."],
        "relate": ["My only goal is to drink more water, honestly.",
                   "I should set goals too, I just drift.",
                   "I gave up on resolutions years ago.",
                   "You're inspiring me a little."],
    },
}
GENERIC_REACT = ["Oh wow, okay.", "No way, seriously!", "That's great news!", "Ha, classic you.", "Oh really? Huh.",
                 "Amazing, I love it.", "Oh, interesting!", "Huh, I didn't know that.", "That's so you, honestly."]


# Greetings, closings and small talk.
OPEN_FIRST = [
    "Hi {p}! So nice to finally chat properly. How's everything going?",
    "Hey {p}, good to meet you properly! How's your week been?",
    "Hello {p}! I've been looking forward to catching up. How are you?",
]
OPEN = [
    "Hey {p}! How've you been?", "Hi {p}, long time no talk!", "Hey! How's your week going?",
    "Morning {p}! Got a minute to chat?", "Hey {p}, it feels like ages. What's new?", "Hiya! How are things?",
    "{p}! Finally, I've been meaning to message you.", "Hey hey. How's life?", "Evening {p}! Long day?",
    "Hi! Sorry I went quiet, it's been a mad few weeks.", "Hey you. What's going on in your world?",
]
OPEN_REPLY = [
    "Hey! All good here, busy but good.", "Hi! Doing alright, just tired.", "Oh hey! Not bad at all, you?",
    "Hello! Honestly, a bit of a whirlwind. You?", "Hey! Good to hear from you. Pretty good, thanks.",
    "Hi {p}! Surviving, mostly. How about you?", "Hey! Can't complain. Well, I could, but I won't.",
    "Oh, hi! Just made a cup of tea, perfect timing.", "Heyyy. It's been a week. How are you?",
]
CLOSE = [
    "Anyway, I should get going. Talk soon!", "Okay, I have to run, but this was fun.", "Right, dinner's calling. Catch you later!",
    "I'm falling asleep, let's chat again soon.", "Gotta go, but let's not leave it so long next time!",
    "Okay, back to work for me. Speak soon {p}!", "I'll let you go. Take care of yourself!",
    "Alright, I need to walk the neighbour's plants, don't ask. Bye!", "Let's pick this up next week?",
]
CLOSE_REPLY = [
    "Bye! Take care of yourself.", "Talk soon, have a good one!", "Sounds good, bye for now!", "Same time next week then!",
    "Take it easy, speak soon!", "Night night, sleep well!", "Catch you later, {p}!", "Good luck with everything this week!",
    "Bye {p}, this was lovely!",
]
SMALLTALK: list[tuple[list[str], list[str], list[str], list[str]]] = [
    # (openers, replies, follow-ups, sentences that can extend any of them)
    (["The weather has been so weird lately.", "It hasn't stopped raining here for days.", "It's finally sunny here, I nearly cried.",
      "Is it as cold where you are? I'm wearing two jumpers indoors.", "This heat is unbearable, I can't think."],
     ["Same here, I don't know what to wear anymore.", "Ugh, tell me about it.", "Ha, I'm just hiding indoors.",
      "I actually like it, don't hate me.", "At least it's good for the garden, I guess."],
     ["Fingers crossed next week is better.", "Hot chocolate season, at least.", "I've given up on planning anything outside.",
      "I keep checking the forecast like it will change its mind."],
     ["My umbrella turned inside out on the way to the shop this morning.", "The forecast said clear skies, which was a lie.",
      "I've had the heating on and off five times today.", "Everyone on the bus looked equally miserable about it.",
      "The cat refuses to go outside, and honestly I get it."]),
    (["I'm so tired this week, I can barely keep my eyes open.", "I slept eleven hours last night and I'm still exhausted.",
      "Why is it that the weekend always goes so fast?", "I need a holiday from my holiday, honestly."],
     ["Oh no, are you sleeping okay?", "Same, I've been a zombie all week.", "Coffee, lots of coffee, that's my only advice.",
      "The struggle is real, my friend."],
     ["I'm going to bed at nine tonight, no excuses.", "I blame my phone, I scroll until midnight.",
      "I think I need a proper routine.", "A nap is calling my name."],
     ["I keep waking up at 4am for no reason at all.", "I fell asleep on the sofa at eight and woke up with a sore neck.",
      "My upstairs neighbours have started doing DIY at night.", "I've tried herbal tea, white noise, everything."]),
    (["Have you seen any good films lately?", "I went to the cinema for the first time in ages.",
      "I can't decide what to watch tonight, any ideas?", "I fell asleep halfway through a film again."],
     ["Not really, nothing grabs me lately.", "Ha, that happens to me every time.", "Ooh, what did you see?",
      "I just rewatch old sitcoms, I'm hopeless."],
     ["Something light, I think. No more crime dramas.", "Popcorn was the best part, not going to lie.",
      "I'll report back.", "Maybe I'll just read instead."],
     ["Everything seems to be a sequel or a remake these days.", "The tickets cost more than dinner, it's ridiculous.",
      "I spent forty minutes scrolling and then watched nothing.", "Someone behind us talked through the whole thing."]),
    (["What are you having for dinner?", "I just made the worst pasta of my life.", "I'm trying to cook more at home.",
      "I had toast for dinner. Twice this week."],
     ["Ha! Honestly, same.", "Takeaway, probably. Don't judge me.", "Cooking is hard when you're tired.",
      "Ooh, good for you. I'm eating crisps."],
     ["Tomorrow I'll be healthier. Maybe.", "There's always soup.", "We should swap recipes sometime.",
      "At least nobody saw it."],
     ["The fridge is basically empty apart from mustard and one sad lemon.", "I bought vegetables with good intentions and they're going soft.",
      "I watched a cooking video and thought I could do it, I could not.", "The smoke alarm went off, which tells you everything."]),
    (["Traffic this morning was unbelievable.", "My train was cancelled again.", "I walked to work today, it was actually nice.",
      "The bus driver just skipped my stop, I'm fuming."],
     ["Oh no, how late were you?", "Public transport is a lottery these days.", "Walking is so underrated.", "Ugh, that's the worst."],
     ["I'm going to start cycling, I swear.", "A podcast got me through it at least.", "Twenty minutes late, my boss didn't even notice.",
      "Nothing a coffee can't fix."],
     ["There were roadworks on every single street for no reason.", "I stood for the whole journey squashed against the door.",
      "The app said three minutes for about half an hour.", "I'm seriously considering buying roller skates."]),
    (["I cleaned the whole flat today, I feel reborn.", "My to-do list is a mile long.", "I finally did my taxes.",
      "Spent the afternoon sorting out old photos."],
     ["Look at you being productive!", "Ugh, I should do that too.", "That's such a good feeling.", "Any embarrassing ones?"],
     ["Now I can relax guilt-free.", "Tomorrow it's laundry, the never-ending story.", "Only took me three months.",
      "So many bad haircuts, oh my."],
     ["I found a twenty in an old coat pocket, so it paid off.", "I put on a playlist and just powered through.",
      "Three bags went to the charity shop already.", "I don't know where all this stuff even comes from."]),
    (["Do you have any plans for the weekend?", "Any weekend plans?", "What are you up to this weekend?"],
     ["Nothing much, maybe a long walk.", "Absolutely nothing, and I can't wait.", "A birthday thing on Saturday, then sleep.",
      "Probably just chores, you know how it is."],
     ["That sounds perfect, honestly.", "Same, I need a quiet one.", "Enjoy it, you've earned it!", "Sometimes nothing is the best plan."],
     ["I've said yes to too many things lately, so I'm guarding my Sunday.", "I might try that new bakery everyone keeps talking about.",
      "My only plan is a long bath and a longer nap.", "There might be a barbecue if the weather behaves."]),
    (["I've been trying to drink less coffee.", "I'm trying to get to bed earlier.", "I've been going on morning walks.",
      "I'm doing a screen-free evening once a week."],
     ["Oh nice, how's that going?", "Oh, good idea, I should copy you.", "I could never, honestly.", "Respect, seriously."],
     ["Badly, but I'm trying.", "Day four, so far so good.", "I feel better already, weirdly.", "Ask me again in a month."],
     ["The first few days were rough, I had a headache all afternoon.", "I bought a proper alarm clock so the phone stays in the kitchen.",
      "It's amazing how much time there is in an evening.", "I keep a little notebook to track it, very nerdy."]),
    (["My phone screen cracked this morning.", "My laptop died in the middle of a meeting.", "The wifi has been down all day."],
     ["Oh no! Can you fix it?", "Honestly, technology hates us.", "That's an absolute nightmare."],
     ["I'll live, it's just annoying.", "Back to pen and paper, I suppose.", "Turned it off and on again, obviously."],
     ["The repair shop quoted me a ridiculous amount.", "I had to hotspot from my phone and it took forever.",
      "Of course it happened right before a deadline.", "I'm convinced my devices can sense fear."]),
    (["Happy almost-Friday!", "Is it just me or has this week lasted a month?", "Monday again, somehow."],
     ["Ha, it really has.", "Don't remind me, please.", "The days are all blurring together."],
     ["We'll make it, I promise.", "Coffee and patience, that's the plan.", "Only a few more days to go."],
     ["I had four meetings that could have been emails.", "I've been counting down since Tuesday lunchtime.",
      "Every day feels like a Wednesday at the moment.", "I'm running on biscuits and stubbornness."]),
]
CHITCHAT_SINGLE = [
    "Ha, yeah, I know.", "True, true, very true.", "Totally, I agree.", "Oh I know, right!", "Right? That's what I said.",
    "So true, honestly.", "Haha, exactly that.", "Fair enough, I suppose.", "That makes total sense.", "Oh, for sure.",
    "Same here, to be fair.", "Yep, that's life.", "Oh no, ha, poor you.", "I hear you, believe me.",
]
FOLLOW = [
    "How did that happen?", "Tell me everything.", "How are you feeling about it?", "What made you decide?",
    "Was it what you expected?", "How long has that been going on?", "Who else knows?", "Are you happy with it?",
    "What's next, then?", "How did everyone react?", "Since when?", "Wait, really?", "Is that a good thing?",
]


# -- fact kinds -----------------------------------------------------------------


@dataclass
class Kind:
    """A fact type: how it is drawn, said, restated and asked."""

    name: str
    topic: str
    slots: Callable[[Picker, random.Random, str], dict[str, Any]]  # (picker, rng, owner name)
    state: list[str]
    ask: list[str]
    answer: str  # template of the answer
    key: str  # slot whose value must be in the evidence turn
    unique: bool = True  # at most once per speaker
    repeat: bool = False  # suitable for the "repeated" category
    again: list[str] = field(default_factory=list)  # extra phrasings for restatements


def _fam(pk: Picker, rng: random.Random, owner: str, female: bool | None = None,
         only: Sequence[str] | None = None) -> dict[str, Any]:
    """A relative or friend of ``owner``: each relation is used once per speaker."""
    if female is None:
        female = rng.random() < 0.5
    def free(female: bool) -> list[str]:
        return [r for r in (FEMALE_RELS if female else MALE_RELS) if f"rel:{owner}:{r}".lower() not in pk.used
                and (only is None or r in only)]

    rels = free(female)
    if not rels and only is None:
        female = not female
        rels = free(female)
    if not rels:
        raise RuntimeError(f"no relation left for {owner}")
    rel = rng.choice(rels)
    pk.claim(f"rel:{owner}:{rel}")
    name = pk.one(FEMALE if female else MALE)
    return {"rel": rel, "fam": name, "pron": "she" if female else "he", "poss": "her" if female else "his",
            "obj": "her" if female else "him"}


def _purchase(pk: Picker, rng: random.Random) -> dict[str, Any]:
    item, item_q, brands = pk.one(PURCHASES)
    brand = pk.one(brands)
    return {"item": item, "a_item": a(item), "item_q": item_q, "brand": brand}


KINDS: list[Kind] = [
    Kind("hometown", "past", lambda pk, rng, o: {"town": pk.one(TOWNS)},
         state=["I grew up in {town}, so city noise still gets to me sometimes.",
                "Back in {town}, where I was a kid, everyone knew everyone's business.",
                "My whole childhood was spent in {town}. Tiny place, one traffic light and a chip shop.",
                "I'm {a_town} kid originally, left at eighteen and never went back for long.",
                "You know I was born and raised in {town}, right? The bakery there still makes the best rolls.",
                "Whenever I smell pine trees I'm right back in {town}, where I spent my first eighteen years.",
                "Going back to {town} for the weekend always reminds me how small the place I come from is.",
                "My parents still live in the house in {town} I grew up in, same wallpaper and everything."],
         ask=["Where is {who} originally from?", "Which town was {who} raised in?", "What's the name of {who}'s hometown?",
              "In what place did {who} spend their early years?"],
         answer="{town}", key="town", repeat=True),
    Kind("band", "media", lambda pk, rng, o: {"band": pk.one(BANDS)},
         state=["I've had {band} on repeat all week, their new album is so good.",
                "Honestly {band} is the only thing getting me through my commute lately.",
                "I finally got my flatmate into {band}, she won't stop humming them now.",
                "If I could only listen to one band forever it would be {band}, no question.",
                "{band} just announced a tour and I'm refreshing the ticket site like a maniac.",
                "I know every word to every {band} song at this point, it's a bit embarrassing.",
                "My ultimate comfort music is {band}. Rainy day, headphones, done."],
         ask=["Which group does {who} listen to constantly?", "What is {who}'s favourite musical act?",
              "Which artists does {who} say they could listen to forever?"],
         answer="{band}", key="band", repeat=True),
    Kind("dish", "food", lambda pk, rng, o: {"dish": pk.one(DISHES)},
         state=["I could eat {dish} every single day and never get bored.",
                "I made {dish} from scratch last night and I'm weirdly proud of it. It's my favourite thing to eat.",
                "My go-to comfort food is {dish}, always has been.",
                "Nothing beats a big bowl of {dish} after a long day, nothing.",
                "If I'm on death row my last meal is {dish}, no hesitation.",
                "I've been trying every {dish} in town to find the best one. It's my favourite food by a mile.",
                "Whenever I'm sad I cook {dish}. It's basically therapy."],
         ask=["What meal does {who} say they'd happily have daily?", "What is {who}'s favourite thing to eat?",
              "Which food does {who} turn to for comfort?"],
         answer="{dish}", key="dish", repeat=True),
    Kind("allergy", "health", lambda pk, rng, o: {"allergen": pk.one(ALLERGENS)},
         state=["Turns out I'm allergic to {allergen}, the doctor confirmed it this week.",
                "I had a reaction to {allergen} again, my face swelled up like a balloon.",
                "I always have to tell waiters about my {allergen} allergy, it's so awkward.",
                "Fun fact about me: I'm allergic to {allergen}. Found out the hard way as a kid.",
                "I carry an antihistamine everywhere because of the {allergen} thing.",
                "Ugh, I forgot to check for {allergen} and spent the evening itching. My own fault."],
         ask=["What is {who} allergic to?", "What substance gives {who} an allergic reaction?",
              "Which allergy does {who} have to warn people about?"],
         answer="{allergen}", key="allergen", repeat=True),
    Kind("instrument", "hobbies", lambda pk, rng, o: {"instrument": pk.one(INSTRUMENTS)},
         state=["I started taking {instrument} lessons, my neighbours must hate me.",
                "I've been practising the {instrument} every night after work.",
                "I bought a second-hand {instrument} and I'm teaching myself from videos.",
                "My {instrument} teacher says I'm improving, but I think she's just being nice.",
                "Learning the {instrument} at my age is humbling, let me tell you.",
                "I played my first full song on the {instrument} today without stopping!",
                "The {instrument} is harder than it looks, my fingers are killing me."],
         ask=["Which musical instrument is {who} learning?", "What does {who} practise playing in the evenings?",
              "What instrument has {who} taken up?"],
         answer="{instrument}", key="instrument", repeat=True),
    Kind("language", "hobbies", lambda pk, rng, o: {"language": pk.one(LANGUAGES)},
         state=["I've started learning {language}, I do twenty minutes a day on the bus.",
                "My {language} is still terrible, but I managed to order a coffee in it.",
                "I'm doing an evening class in {language}, the grammar is breaking my brain.",
                "I've been watching cartoons in {language} to practise, don't laugh.",
                "Signed up for {a_language} conversation group, everyone's so patient with me.",
                "Three months into {language} and I can finally introduce myself properly."],
         ask=["Which foreign tongue is {who} studying?", "What language is {who} trying to pick up?",
              "Which language has {who} been practising?"],
         answer="{language}", key="language", repeat=True),
    Kind("show", "media", lambda pk, rng, o: {"show": pk.one(SHOWS)},
         state=["I've been binge-watching {show}, I did four episodes last night.",
                "Have you seen {show}? I'm obsessed, the second season is even better.",
                "I finally started {show} after everyone kept telling me to.",
                "I'm rationing the last episodes of {show}, I don't want it to end.",
                "{show} has completely taken over my evenings, send help.",
                "Stayed up way too late finishing {show}. Worth it though."],
         ask=["What TV series has {who} been hooked on?", "Which programme has {who} been streaming nonstop?",
              "What show is {who} obsessed with?"],
         answer="{show}", key="show", repeat=True),
    Kind("book", "media", lambda pk, rng, o: dict(zip(("title", "author"), pk.one(BOOKS))),
         state=["I just finished {title} by {author}, I couldn't put it down.",
                "I'm reading {title} at the moment, it's gorgeous and a bit heartbreaking.",
                "Book club picked {title} this month, and for once I actually love it.",
                "I cried at the end of {title}, on the train, in public.",
                "{title} is the best thing I've read all year, easily.",
                "Someone left {title} on the bench at the station, so I took it home, and wow."],
         ask=["Which novel did {who} say they loved recently?", "What book has {who} been raving about?",
              "Which title did {who} find impossible to put down?"],
         answer="{title}", key="title", repeat=True),
    Kind("volunteer", "goals", lambda pk, rng, o: {"place": pk.one(VOLUNTEER)},
         state=["I've started volunteering at the {place} on Saturday mornings.",
                "My shifts at the {place} are honestly the highlight of my week.",
                "I signed up to help out at the {place}, I start next week.",
                "Spent the whole morning at the {place} again, I'm exhausted but happy.",
                "The people at the {place} where I volunteer are the kindest I've met.",
                "I give a few hours a week to the {place}, it keeps me grounded."],
         ask=["Where does {who} do unpaid work?", "Which organisation does {who} help out at for free?",
              "Where does {who} give their time as a volunteer?"],
         answer="{place}", key="place", repeat=True),
    Kind("drink", "food", lambda pk, rng, o: {"drink": pk.one(DRINKS)},
         state=["The barista downstairs starts making my {drink} as soon as I walk in.",
                "I can't start the day without {a_drink}, it's a problem.",
                "My order is always {a_drink}, I've never once changed it.",
                "I spend an embarrassing amount on {drink}s every month.",
                "Nothing gets me through a Monday like a big {drink}.",
                "I tried to switch from my usual {drink} to plain water. Lasted a day."],
         ask=["What is {who}'s usual café order?", "What does {who} always get from the coffee shop?",
              "Which drink does {who} need every morning?"],
         answer="{drink}", key="drink", repeat=True),
    Kind("garden", "hobbies", lambda pk, rng, o: {"veg": pk.one(VEG)},
         state=["I'm growing {veg} on the balcony this year, fingers crossed.",
                "My allotment is mostly {veg} at the moment, way too many of them.",
                "The {veg} I planted in spring are finally coming up!",
                "I've been giving away bags of {veg} from the garden to everyone I know.",
                "Squirrels keep digging up my {veg}, it's war.",
                "I built a little raised bed just for {veg}, very proud of it."],
         ask=["What produce is {who} raising at home?", "What is {who} growing in their garden plot?",
              "Which crop has {who} been cultivating?"],
         answer="{veg}", key="veg", repeat=True),
    Kind("goal", "goals", lambda pk, rng, o: dict(zip(("goal", "goal_q", "goal_key"), pk.one(GOALS))),
         state=["My big goal this year is to {goal}.", "I've decided I'm going to {goal}. There, I said it out loud.",
                "I've been quietly working towards one thing: I want to {goal}.",
                "Don't laugh, but I really want to {goal}.", "Life goal update: still determined to {goal}.",
                "Everyone has a thing, and mine is that I want to {goal}."],
         ask=[], answer="{goal_key}", key="goal_key", repeat=True),
    # Multi-instance kinds: each instance has a descriptor the question uses.
    Kind("fam_name", "family", lambda pk, rng, o: _fam(pk, rng, o),
         state=["My {rel} {fam} came to stay for the weekend, we stayed up talking till 3am.",
                "I had lunch with my {rel} {fam} yesterday, {pron} always makes me laugh.",
                "My {rel}, {fam}, just got back from a work trip and brought me chocolate.",
                "{fam}, my {rel}, called me in tears about {poss} landlord, what a saga.",
                "I spent Sunday helping my {rel} {fam} paint {poss} kitchen.",
                "My {rel} {fam} is the funniest person I know, honestly."],
         ask=["What is the name of {who}'s {rel}?", "What is {who}'s {rel} called?", "Who is {who}'s {rel}?"],
         answer="{fam}", key="fam", unique=False),
    Kind("fam_job", "family",
         lambda pk, rng, o: {**_fam(pk, rng, o), "famjob": pk.one(FAM_JOBS)},
         state=["My {rel} {fam} works as {a_famjob}, so {pron} has the best stories.",
                "{fam}, my {rel}, has been {a_famjob} for ten years now.",
                "My {rel} is {a_famjob}, which explains a lot about {poss} personality.",
                "My {rel} {fam} just got promoted. {pron_c}'s {a_famjob}, did I ever tell you?",
                "Dinner with my {rel} is never boring, {pron} works as {a_famjob}.",
                "Being {a_famjob} like my {rel} {fam} would drive me mad, but {pron} loves it."],
         ask=["What does {who}'s {rel} do for a living?", "What is the occupation of {who}'s {rel}?",
              "What line of work is {who}'s {rel} in?"],
         answer="{famjob}", key="famjob", unique=False),
    Kind("purchase", "shopping", lambda pk, rng, o: _purchase(pk, rng),
         state=["I finally bought {a_item}, {a_brand}, after months of thinking about it.",
                "Treated myself to {a_brand} {item}. No regrets so far.",
                "The new {item} arrived! I went with {brand} in the end.",
                "I caved and got {a_item}. {brand}, second-hand, like new.",
                "My {brand} {item} turned up today, I've been playing with it all evening.",
                "After forty reviews and three shops, I bought the {brand} {item}."],
         ask=["Which brand of {item_q} did {who} buy?", "What make is the {item_q} {who} purchased?",
              "Which company made the {item_q} {who} got?"],
         answer="{brand}", key="brand", unique=False),
    Kind("injury", "health",
         lambda pk, rng, o: dict(zip(("injury", "part", "cause", "cause_key"), pk.one(INJURIES))),
         state=["I {injury} {cause}. Not my finest moment.", "So I {injury}. How? {cause_c}, of course.",
                "Guess who {injury}? Me. {cause_c}.", "I'm on the sofa because I {injury} {cause}.",
                "Small disaster: I {injury} {cause}. The nurse laughed at me.",
                "Bit of a mishap this week, I {injury} {cause}."],
         ask=["How did {who} hurt their {part}?", "What was {who} doing when they injured their {part}?",
              "What caused {who}'s {part} injury?"],
         answer="{cause}", key="cause_key", unique=False),
    Kind("restaurant", "food",
         lambda pk, rng, o: {"rest": pk.one(RESTAURANTS), **dict(zip(("cuisine", "cuisine_q"), pk.one(CUISINES)))},
         state=["We tried a new {cuisine} place called {rest}, it was incredible.",
                "Have you been to {rest}? Best {cuisine} food I've ever had.",
                "Had dinner at {rest} on Friday, it's {cuisine}, go before it gets famous.",
                "{rest} just opened near me, it's a tiny {cuisine} spot with like six tables.",
                "I'm still thinking about the meal we had at {rest}. {cuisine_c} food is my new obsession.",
                "My birthday dinner was at {rest}, {a_cuisine} restaurant, and they sang to me. Mortifying."],
         ask=["What was the name of the {cuisine_q} restaurant {who} went to?",
              "Which {cuisine_q} eatery did {who} recommend?", "What's the {cuisine_q} place {who} loved called?"],
         answer="{rest}", key="rest", unique=False),
    Kind("coworker", "work",
         lambda pk, rng, o: {"friend": pk.one(FEMALE + MALE), **dict(zip(("quirk", "quirk_q"), pk.one(QUIRKS)))},
         state=["My coworker {friend} {quirk}, I don't know how.",
                "There's someone at work, {friend}, who {quirk}. Legend.",
                "{friend} from my team {quirk}. I aspire to that energy.",
                "Did I tell you about {friend}? My colleague who {quirk}?",
                "The office would fall apart without {friend}, who also {quirk}.",
                "I sit next to {friend} at work, and {friend} {quirk}. Never a dull day."],
         ask=["Which of {who}'s colleagues {quirk_q}?", "What's the name of {who}'s coworker who {quirk_q}?",
              "Who at {who}'s workplace {quirk_q}?"],
         answer="{friend}", key="friend", unique=False),
    Kind("gift", "family",
         lambda pk, rng, o: {**_fam(pk, rng, o), "gift": pk.one(GIFTS)},
         state=["My {rel} got me {a_gift} for my birthday, I nearly cried.",
                "Best birthday present ever: {a_gift}, from my {rel} {fam}.",
                "{fam}, my {rel}, surprised me with {a_gift}. For my birthday! I'm spoiled.",
                "I turned another year older and my {rel} gave me {a_gift}. Perfect choice.",
                "Look what arrived for my birthday, {a_gift} from my {rel}!",
                "My {rel} always nails presents, this year it was {a_gift}."],
         ask=["What present did {who} receive from their {rel} for their birthday?",
              "What did {who}'s {rel} give them when they turned a year older?",
              "Which birthday gift did {who} get from their {rel}?"],
         answer="{gift}", key="gift", unique=False),
]
KIND = {k.name: k for k in KINDS}


def _extend(slots: dict[str, Any]) -> dict[str, Any]:
    """Derived slots: articles and capitalised forms."""
    out = dict(slots)
    for name, value in slots.items():
        if isinstance(value, str) and value:
            out[f"a_{name}"] = a(value)
            out[f"{name}_c"] = value[0].upper() + value[1:]
    return out


# -- planning -------------------------------------------------------------------


@dataclass
class Part:
    """One fact-bearing turn waiting for its place in a session."""

    pid: str
    speaker: int
    session: int  # 0-based
    text: str
    topic: str
    order: int = 0  # within a session, parts with lower order come first


@dataclass
class QPlan:
    category: str
    speaker: int
    text: str
    answer: str
    evidence: list[str]  # part ids
    keys: list[tuple[str, str]]  # (part id, string)


class Planner:
    def __init__(self, rng: random.Random, names: list[str], dates: list[datetime]) -> None:
        self.rng = rng
        self.pk = Picker(rng)
        for n in names:
            self.pk.claim(n)
        self.names = names
        self.dates = dates
        self.n = len(dates)
        self.load = [0] * self.n
        self.parts: list[Part] = []
        self.questions: list[QPlan] = []
        self.used_kinds: list[set[str]] = [set(), set()]
        self._pid = 0

    # sessions
    def session(self, lo: int, hi: int) -> int:
        lo, hi = max(0, lo), min(self.n, hi)
        if hi <= lo:
            lo, hi = max(0, hi - 1), max(1, hi)
        span = list(range(lo, hi))
        least = min(self.load[s] for s in span)
        choices = [s for s in span if self.load[s] <= least + 1]
        s = self.rng.choice(choices)
        self.load[s] += 1
        return s

    def sessions(self, count: int, lo: int, hi: int, gap: int = 2) -> list[int]:
        """``count`` increasing sessions in [lo, hi) at least ``gap`` apart where possible."""
        lo, hi = max(0, lo), min(self.n, hi)
        for _ in range(200):
            picks = sorted(self.rng.sample(range(lo, hi), count)) if hi - lo >= count else list(range(lo, lo + count))
            if all(b - a >= gap for a, b in zip(picks, picks[1:])):
                break
        for s in picks:
            self.load[s] += 1
        return picks

    @property
    def old(self) -> tuple[int, int]:
        return 0, max(1, self.n // 3)

    @property
    def recent(self) -> tuple[int, int]:
        return self.n - max(1, self.n // 3), self.n

    def part(self, speaker: int, session: int, text: str, topic: str, order: int = 0) -> str:
        self._pid += 1
        pid = f"P{self._pid}"
        self.parts.append(Part(pid, speaker, session, text, topic, order))
        return pid

    def ask(self, category: str, speaker: int, templates: Sequence[str], slots: dict[str, Any], answer: str,
            evidence: list[str], keys: list[tuple[str, str]]) -> None:
        text = fill(self.rng.choice(list(templates)), {**slots, "who": self.names[speaker]})
        text = text[0].upper() + text[1:]
        self.questions.append(QPlan(category, speaker, text, answer, evidence, keys))

    # -- single facts --------------------------------------------------------------

    def pick(self, speaker: int, repeat: bool = False) -> tuple[Kind, dict[str, Any]]:
        """A kind this speaker can still use, and its drawn slots (kinds whose pools ran dry are skipped)."""
        options = [k for k in KINDS if (not k.unique or k.name not in self.used_kinds[speaker])
                   and (not repeat or (k.repeat and k.unique))]
        while options:
            kind = self.rng.choice(options)
            try:
                slots = kind.slots(self.pk, self.rng, self.names[speaker])
            except RuntimeError:  # a pool is exhausted for this conversation
                options.remove(kind)
                continue
            self.used_kinds[speaker].add(kind.name)
            if "pron" in slots:
                slots["pron_c"] = slots["pron"].capitalize()
            return kind, _extend(slots)
        raise RuntimeError("no fact kind left")

    def kind_questions(self, kind: Kind, slots: dict[str, Any]) -> list[str]:
        if kind.name == "goal":
            return [slots["goal_q"]]
        return kind.ask

    def single(self, speaker: int, category: str | None, lo: int, hi: int) -> None:
        kind, slots = self.pick(speaker)
        s = self.session(lo, hi)
        text = wrap(self.rng, fill(self.rng.choice(kind.state), slots))
        pid = self.part(speaker, s, text, kind.topic)
        if category:
            self.ask(category, speaker, self.kind_questions(kind, slots), slots, fill(kind.answer, slots), [pid],
                     [(pid, slots[kind.key])])

    def repeated(self, speaker: int) -> None:
        kind, slots = self.pick(speaker, repeat=True)
        times = 2 if self.rng.random() < 0.55 else 3
        sessions = self.sessions(times, 0, self.n, gap=3)
        templates = self.rng.sample(kind.state, times)
        pids = []
        agains = ["Like I said before, ", "I know I keep going on about it, but ", "As you know, ", "Still true: ",
                  "Remember how I told you? ", "I swear I mention this every time, but ", "", ""]
        for i, (s, t) in enumerate(zip(sessions, templates)):
            sentence = fill(t, slots)
            lead = self.rng.choice(agains) if i and self.rng.random() < 0.6 else ""
            if lead:
                sentence = lead + (decap(sentence) if lead[-2] not in ".!?:" else sentence)
            pids.append(self.part(speaker, s, wrap(self.rng, sentence, lead_p=0.0 if lead else 0.45), kind.topic))
        self.ask("repeated", speaker, self.kind_questions(kind, slots), slots, fill(kind.answer, slots), pids,
                 [(pid, slots[kind.key]) for pid in pids])

    # -- changes ---------------------------------------------------------------------

    def change(self, speaker: int, which: str) -> None:
        rng, pk = self.rng, self.pk
        s1, s2 = self.sessions(2, 0, self.n, gap=3) if which != "day" else (None, None)
        if which == "day":
            s1 = self.session(0, self.n - 1)
            s2 = s1 + 1
            self.load[s2] += 1
        ask_now: list[str]
        ask_before: list[str]
        if which == "city":
            old, new = pk.one(CITIES), pk.one(CITIES)
            hood = rng.choice(HOODS)
            slots = {"old": old, "new": new, "hood": hood}
            orig = ["I live in {old} now, {hood}. Love it so far.", "Life in {old} is good, the flat is {hood}.",
                    "I've been in {old} for about three years now, {hood}.",
                    "My place in {old} is tiny, but it's {hood}, so I can't complain.",
                    "Honestly {old} is the best city I've lived in. I'm {hood}.",
                    "Rent in {old} keeps going up, but I love being {hood}."]
            chg = ["Big news: I've moved to {new}! Boxes everywhere.", "We did it, we packed up and moved to {new} last week.",
                   "So I'm officially {a_new} resident now. Left {old} behind, bittersweet.",
                   "The move to {new} is done. My back will never recover.",
                   "New city, new me: I live in {new} now, got the keys on Friday.",
                   "I took the plunge and relocated to {new}. Still getting lost every day."]
            ask_now = ["Which city does {who} live in at this point?", "Where is {who} based these days?",
                       "In what city is {who}'s home now?"]
            ask_before = ["Where did {who} live before relocating?", "Which city did {who} leave when they moved?",
                          "What was {who}'s home city prior to the move?"]
            topic = "home"
        elif which == "job":
            old, new = pk.one(EMPLOYERS), pk.one(EMPLOYERS)
            role = pk.one(ROLES)
            slots = {"old": old, "new": new, "role": role, "a_role": a(role)}
            orig = ["I work as {a_role} at {old}, it's fine, pays the bills.", "Work at {old} has been hectic, we're short on staff.",
                    "I've been {a_role} at {old} for a couple of years now.", "Another long shift at {old}, I'm dead on my feet.",
                    "My job at {old} is okay, the people make it.", "Things at {old} are changing, new management and all that."]
            chg = ["I handed in my notice! I'm starting at {new} next month.", "First week at {new} done, and I think I like it.",
                   "So I got the job at {new}! Same kind of work, much better pay.", "I've left {old}, I'm at {new} now. Best decision.",
                   "New badge, new desk: I officially work for {new} now.", "I accepted the offer from {new}, I start Monday."]
            ask_now = ["Who employs {who} at the moment?", "Which company is {who} working for now?",
                       "What organisation does {who} currently work at?"]
            ask_before = ["Which company did {who} leave for their new job?", "Where was {who} employed before switching?",
                          "What was {who}'s previous employer?"]
            topic = "work"
        elif which == "pet":
            species = rng.choice(list(PETS))
            breed = rng.choice(PETS[species])
            old, new = pk.one(PET_NAMES), pk.one(PET_NAMES)
            slots = {"old": old, "new": new, "species": species, "breed": breed, "a_breed": a(breed)}
            orig = ["We adopted {a_breed}! We've named the little one {old}.", "My {species} {old} knocked a plant off the shelf again.",
                    "{old}, my {breed}, has decided my laptop is a bed.", "Meet {old}, our new {species}! Well, you can't meet, but picture it.",
                    "I took {old} to the vet, my poor {species} was so dramatic about it.", "Our {breed} is called {old}, he's a total menace."]
            chg = ["We ended up renaming the {species}, the old name never stuck. He's {new} now.",
                   "Funny thing, we call him {new} these days. The other name just didn't suit him.",
                   "So the {species} has a new name: {new}. The kids insisted.",
                   "Name change in our house: the {breed} answers to {new} now, and only {new}.",
                   "We switched his name to {new}. Don't ask, long story involving a song.",
                   "He's officially {new} now, we even changed the tag on his collar."]
            ask_now = ["What is {who}'s {species} called at present?", "What name does {who}'s {species} go by now?",
                       "What do they call {who}'s {species} these days?"]
            ask_before = ["What was the original name of {who}'s {species}?", "What was {who}'s {species} first called?",
                          "Before the renaming, what was {who}'s {species}'s name?"]
            topic = "pets"
        elif which == "trip":
            old, new = pk.one(DESTINATIONS), pk.one(DESTINATIONS)
            month = rng.choice(MONTHS)
            slots = {"old": old, "new": new, "month": month}
            orig = ["We're planning a trip to {old} in {month}, I've started a packing list already.",
                    "I booked flights to {old} for {month}! Can't wait.", "The plan for {month} is {old}, two weeks, no laptop.",
                    "Thinking of {old} for the {month} holiday, I've heard it's gorgeous then.",
                    "{old_c} in {month}, that's the dream. We've been saving all year."]
            chg = ["Change of plan for {month}: we're going to {new} instead. The other place fell through.",
                   "We cancelled the original trip, so it's {new} now. Honestly might be better.",
                   "Plot twist: the {month} holiday is {new}. Long story, flights were a disaster.",
                   "We scrapped the first idea and booked {new} for {month} instead.",
                   "So the holiday's off, well, moved: {new}, same dates. The other plan got too expensive."]
            ask_now = ["Where is {who} heading for the {month} holiday?", "What destination did {who} end up choosing for {month}?",
                       "Where will {who} travel in {month}?"]
            ask_before = ["Which destination did {who} originally have in mind for {month}?",
                          "Where was {who} first planning to go in {month}?", "What trip did {who} cancel for {month}?"]
            topic = "travel"
        elif which == "day":
            occ, occ_said, occ_q = rng.choice(OCCASIONS)
            fam = _fam(pk, rng, self.names[speaker])
            d1, d2 = rng.sample(WEEKDAYS, 2)
            slots = {"old": d1, "new": d2, "occ": occ_said, "occ_q": occ_q, **fam}
            orig = ["My {rel}'s {occ} is on {old}, so I'm taking the afternoon off.", "Don't forget, my {rel}'s {occ} is {old}!",
                    "I'm so nervous for my {rel}'s {occ} on {old}, it's a big deal for {obj}.",
                    "Next week is mad: my {rel}'s {occ}, which is {old}, and two deadlines.",
                    "I promised I'd be front row at my {rel}'s {occ} on {old}."]
            chg = ["Correction, I got it wrong: the {occ} is {new}, not {old}. I'd have missed it!",
                   "Oops, the {occ} is actually on {new}. I had the wrong day in my calendar.",
                   "Turns out my {rel}'s {occ} is {new}. Glad I double-checked, I'd have shown up on {old}.",
                   "Small mix-up: the {occ} moved to {new}. Or I misread it, more likely.",
                   "Wait, actually it's {new}, not {old}. My {rel} just told me off for getting it wrong."]
            ask_now = ["On which day is {who}'s {rel}'s {occ_q}?", "What day of the week will {who}'s {rel}'s {occ_q} take place?"]
            ask_before = ["Which day did {who} first think their {rel}'s {occ_q} was on?",
                          "What was the day {who} originally gave for the {occ_q}, before correcting it?"]
            topic = "family"
        elif which == "car":
            old, new = pk.one(CARS), pk.one(CARS)
            slots = {"old": old, "new": new}
            orig = ["My old {old} is making a funny noise again.", "I drive {a_old}, it's not glamorous but it's never let me down.",
                    "Took the {old} for a road trip, she did great.", "The {old} needs new tyres, there goes my savings.",
                    "I love my little {old}, I'll drive it till it falls apart."]
            chg = ["I finally sold my old car and bought {a_new}!", "Traded the old car in, I'm driving {a_new} now.",
                   "The new car is here: {a_new}. I keep going out just to sit in it.",
                   "Said goodbye to the {old}, hello {new}.", "We went for {a_new} in the end, second-hand but spotless."]
            ask_now = ["What vehicle does {who} drive now?", "What car does {who} have at present?"]
            ask_before = ["What car did {who} drive before getting the new one?", "Which vehicle did {who} get rid of?"]
            topic = "shopping"
        elif which == "sport":
            (old, old_place), (new, new_place) = pk.one(SPORTS), pk.one(SPORTS)
            slots = {"old": old, "new": new, "old_place": old_place, "new_place": new_place}
            orig = ["I joined {a_old_place}! Training is Tuesdays and Thursdays.", "{old_c} is my new thing, I'm hooked.",
                    "My {old_place} has a match on Sunday, I'm terrified.", "I'm so sore from {old} practice, every muscle.",
                    "Signed up for {old} this season, it's brutal but fun."]
            chg = ["I've given up {old}, I'm doing {new} now. Much more my speed.", "Quit the {old_place}, joined {a_new_place} instead.",
                   "So {new} is my new sport, the other one wasn't for me.", "I switched to {new}, my knees thank me.",
                   "Left the old club. {new_c} is where it's at now, honestly."]
            ask_now = ["What sport does {who} play nowadays?", "Which sport is {who} doing at the moment?"]
            ask_before = ["What sport did {who} give up?", "Which sport did {who} do before switching?"]
            topic = "hobbies"
        elif which == "bandname":
            old, new = pk.one(OWN_BANDS), pk.one(OWN_BANDS)
            slots = {"old": old, "new": new}
            orig = ["My little band is called {old}, we play covers in the pub.", "{old}, that's my band, has a gig next week!",
                    "We finally picked a name for the band: {old}.", "Rehearsal with {old} went long again, my fingers hurt.",
                    "The pub asked {old} to play again, so I guess we weren't terrible."]
            chg = ["We renamed the band, we're {new} now. The old name was already taken online.",
                   "New band name: {new}. We voted, it was very democratic.", "The band's called {new} these days, new logo and everything.",
                   "Rebrand! We're {new} from now on.", "We changed our name to {new}, the drummer finally got his way."]
            ask_now = ["What is {who}'s band called now?", "Under what name does {who}'s band play these days?"]
            ask_before = ["What was {who}'s band called originally?", "What was the first name of {who}'s band?"]
            topic = "hobbies"
        elif which == "course":
            old, new = pk.one(SUBJECTS), pk.one(SUBJECTS)
            slots = {"old": old, "new": new}
            orig = ["I enrolled in a night course in {old}, it's a lot of reading.", "My {old} class is twice a week, it's intense.",
                    "Studying {old} in the evenings, I have an essay due Friday.", "I love my {old} course, the tutor is brilliant.",
                    "Signed up to study {old} part-time, wish me luck."]
            chg = ["I switched courses, I'm doing {new} now. The other one wasn't clicking.",
                   "I dropped {old} and started {new} instead, much happier.", "New course: {new}. Same college, different building.",
                   "So I'm studying {new} now, changed my mind after the first term.", "{new_c} is my subject now, I transferred last week."]
            ask_now = ["What subject is {who} studying now?", "Which course is {who} taking at present?"]
            ask_before = ["Which course did {who} drop?", "What subject did {who} study before switching?"]
            topic = "goals"
        else:  # pragma: no cover
            raise ValueError(which)
        slots = _extend(slots)
        p1 = self.part(speaker, s1, wrap(self.rng, fill(rng.choice(orig), slots)), topic)
        p2 = self.part(speaker, s2, wrap(self.rng, fill(rng.choice(chg), slots)), topic)
        self.ask("current", speaker, ask_now, slots, slots["new"], [p2], [(p2, slots["new"])])
        self.ask("before_change", speaker, ask_before, slots, slots["old"], [p1, p2], [(p1, slots["old"])])

    # -- events with dates -------------------------------------------------------------

    def temporal(self, speaker: int, which: str) -> None:
        rng, pk = self.rng, self.pk
        s = self.session(0, self.n)
        day = self.dates[s]
        when, event_day, answer = relative_time(rng, day)
        if which == "race":
            key, said, asked = pk.one(RACES)
            stmt = ["I ran {said} {when}! My legs have not forgiven me.", "{when_c} I did {said}. Finished, didn't die.",
                    "So {said} was {when}, and I actually beat my time.", "I finished {said} {when}, the crowd was amazing.",
                    "My medal from {said} {when} is hanging on the fridge."]
            ask = ["When did {who} take part in the {asked}?", "On what date did {who} do the {asked}?"]
        elif which == "concert":
            key = pk.one(BANDS)
            said, asked = key, key
            stmt = ["I saw {said} live {when}, best gig of my life.", "{when_c} I finally went to {a_said} concert!",
                    "Went to see {said} {when}, I've lost my voice from singing.", "The {said} show {when} was unreal, front row."]
            ask = ["When did {who} go to a concert?", "On what date did {who} see a band play live?"]
        elif which == "workshop":
            key, said, asked = pk.one(WORKSHOPS)
            stmt = ["I went to {said} {when}, made a total mess and loved it.", "{when_c} I did {said}, finally ticked it off my list.",
                    "Did {said} {when}, the instructor was hilarious.", "I took {said} {when} and I'm already signing up for the next one."]
            ask = ["When did {who} go to the {asked}?", "On which date did {who} attend {a_asked}?"]
        elif which == "milestone":
            key, said, asked = pk.one(MILESTONES)
            stmt = ["I {said} {when}!", "{when_c} I {said}. Big day.", "Guess what, I {said} {when}.",
                    "I {said} {when}, still processing it."]
            ask = ["When did {who} {asked}?", "On what date did {who} {asked}?"]
        elif which == "hike":
            key = pk.one(MOUNTAINS)
            said, asked = key, key
            stmt = ["We climbed {said} {when}, the view from the top was ridiculous.", "{when_c} I hiked up {said}, six hours return.",
                    "Made it to the summit of {said} {when}, legs like jelly."]
            ask = ["When did {who} reach a mountain summit?", "On what date did {who} go up a peak on foot?"]
        elif which == "camping":
            key = pk.one(CAMPSITES)
            said, asked = key, key
            stmt = ["We went camping at {said} {when}, it rained the whole time and I loved it.",
                    "{when_c} we pitched a tent at {said}. Saw a fox at 5am.",
                    "Spent the night camping by {said} {when}, no signal, bliss."]
            ask = ["When did {who} spend a night outdoors in a tent?", "When did {who} go on a camping trip?"]
        elif which == "interview":
            key = pk.one(EMPLOYERS)
            said, asked = key, key
            stmt = ["I had an interview at {said} {when}, I think it went okay?", "{when_c} I interviewed with {said}. Fingers crossed.",
                    "My interview with {said} was {when}, they asked me the weirdest questions."]
            ask = ["When did {who} have a job interview?", "On what date did {who} interview for a new position?"]
        elif which == "party":
            key, said, asked = pk.one(PARTIES)
            stmt = ["We threw {said} {when}, the flat is still recovering.", "{when_c} I hosted {said}. Total chaos, ten out of ten.",
                    "I organised {said} {when} and people actually came!", "So {said} happened {when}, I'm still finding glitter."]
            ask = ["When did {who} {asked}?", "On what date did {who} {asked}?"]
        else:  # pragma: no cover
            raise ValueError(which)
        slots = _extend({"said": said, "asked": asked, "when": when})
        topic = {"workshop": "hobbies", "interview": "work", "camping": "travel"}.get(which, "events")
        pid = self.part(speaker, s, wrap(rng, fill(rng.choice(stmt), slots), lead_p=0.35), topic)
        self.ask("temporal", speaker, ask, slots, answer, [pid], [(pid, key)])

    # -- multi-hop ------------------------------------------------------------------------

    def multi_hop(self, speaker: int, which: str) -> None:
        rng, pk = self.rng, self.pk
        other = 1 - speaker
        if which == "baby":
            fam = _fam(pk, rng, self.names[speaker], female=True,
                       only=("sister", "cousin", "sister-in-law", "best friend", "niece"))
            baby = pk.one(FEMALE + MALE)
            slots = _extend({**fam, "baby": baby})
            s1, s2 = self.sessions(2, 0, self.n, gap=3)
            a_ = ["My {rel} {fam} is pregnant! I'm going to be the fun relative.",
                  "Huge family news: my {rel} {fam} is expecting in the spring.",
                  "{fam}, my {rel}, just told us she's having a baby!"]
            b_ = ["{fam} had the baby! A little one called {baby}, perfectly healthy.",
                  "Baby {baby} arrived on Tuesday! {fam} is exhausted but glowing.",
                  "Meet {baby}, {fam}'s newborn. I held the baby for an hour and cried."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "family")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "family")
            self.ask("multi_hop", speaker, ["What is the name of {who}'s {rel}'s baby?", "What did {who}'s {rel} call the newborn?"],
                     slots, baby, [p1, p2], [(p1, slots["fam"]), (p2, baby)])
        elif which == "adopt":
            species = rng.choice(["dog", "cat"])
            breed = pk.one(PETS[species])
            pname = pk.one(PET_NAMES)
            slots = _extend({"breed": breed, "pname": pname, "species": species})
            s1, s2 = self.sessions(2, 0, self.n, gap=2)
            a_ = ["We're adopting {a_breed} from the shelter next week! Still arguing about names.",
                  "I put in an application for {a_breed} at the rescue. They said yes!",
                  "We're getting {a_breed}! No name yet, suggestions welcome."]
            b_ = ["We finally agreed on a name for the new baby: {pname}. It suits the little rascal perfectly.",
                  "Name decided! {pname}. The little one already comes when called. Sometimes.",
                  "{pname} is settling in, that's what we went with for a name in the end."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "pets")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "pets")
            self.ask("multi_hop", speaker, ["What did {who} name the {breed} they adopted?", "What is the name of {who}'s rescue {breed}?"],
                     slots, pname, [p1, p2], [(p1, breed), (p2, pname)])
        elif which == "trip":
            dest = pk.one(DESTINATIONS)
            hl, hl_key = pk.one(HIGHLIGHTS)
            slots = _extend({"dest": dest, "hl": hl})
            s1, s2 = self.sessions(2, 0, self.n, gap=2)
            a_ = ["We're off to {dest} next month, first proper holiday in years.", "Booked it! {dest_c} for ten days.",
                  "I'm heading to {dest} soon, any tips?"]
            b_ = ["Back from the trip! The highlight was {hl}, I'll never forget it.",
                  "Home again. Best bit of the whole holiday was {hl}.",
                  "Still jet-lagged. Honestly nothing beat {hl}, the rest was a blur."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "travel")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "travel")
            self.ask("multi_hop", speaker, ["What was the best part of {who}'s holiday in {dest}?",
                                            "What did {who} enjoy most while visiting {dest}?"],
                     slots, hl, [p1, p2], [(p1, dest), (p2, hl_key)])
        elif which == "coworker":
            friend = pk.one(FEMALE + MALE)
            quirk, quirk_q = pk.one(QUIRKS)
            thing, thing_key = rng.choice([("signing up for a charity triathlon", "triathlon"),
                                           ("joining the office pub quiz team", "pub quiz"),
                                           ("trying an ice bath", "ice bath"), ("going to a salsa night", "salsa"),
                                           ("adopting a stray kitten", "kitten"), ("running for the union rep job", "union")])
            slots = _extend({"friend": friend, "quirk": quirk, "thing": thing})
            s1, s2 = self.sessions(2, 0, self.n, gap=2)
            a_ = ["My coworker {friend} {quirk}, absolute legend.", "There's this person at work, {friend}, who {quirk}."]
            b_ = ["{friend} talked me into {thing}. I don't know how, I just said yes.",
                  "Guess who convinced me into {thing}? {friend}, obviously."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "work")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "work")
            self.ask("multi_hop", speaker, ["What did {who}'s coworker who {quirk_q} persuade them to do?",
                                            "What did the colleague of {who} who {quirk_q} talk them into?"],
                     {**slots, "quirk_q": quirk_q}, thing, [p1, p2], [(p1, friend), (p2, thing_key)])
        elif which == "recommend":
            title, author = pk.one(BOOKS)
            slots = _extend({"title": title, "author": author, "p": self.names[speaker]})
            s1, s2 = self.sessions(2, 0, self.n, gap=2)
            a_ = ["{p}, you have to read {title}. Trust me on this one.", "You should pick up {title} by {author}, I think you'd love it.",
                  "If you need a book, get {title}. It's right up your street."]
            b_ = ["I finally read that book you recommended! The ending wrecked me.",
                  "Okay, I read the novel you told me about. You were right, as usual.",
                  "Finished the book you suggested, stayed up till 2am for the last chapters."]
            p1 = self.part(other, s1, wrap(rng, fill(rng.choice(a_), slots)), "media")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "media")
            key2 = "book" if "book" in self.parts[-1].text else "novel"
            self.ask("multi_hop", speaker, ["Which book did {who} read on {other}'s recommendation?",
                                            "What novel did {other} suggest that {who} went on to finish?"],
                     {**slots, "other": self.names[other]}, title, [p1, p2], [(p1, title), (p2, key2)])
        elif which == "sibling":  # three turns
            fam = _fam(pk, rng, self.names[speaker])
            city = pk.one(CITIES)
            emp = pk.one(EMPLOYERS)
            slots = _extend({**fam, "city": city, "emp": emp})
            s1, s2, s3 = self.sessions(3, 0, self.n, gap=2)
            a_ = ["My {rel} {fam} is visiting next week, I need to clean.", "I miss my {rel} {fam}, we used to be inseparable.",
                  "Had a long call with my {rel}, {fam}, last night."]
            b_ = ["{fam} moved to {city}! I'm already planning a visit.", "So {fam} packed up and went to {city}, just like that."]
            c_ = ["{fam} got a job at {emp}, such a relief after months of searching.",
                  "Good news, {fam} starts at {emp} on Monday."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "family")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "family")
            p3 = self.part(speaker, s3, wrap(rng, fill(rng.choice(c_), slots)), "family")
            self.ask("multi_hop", speaker, ["Where does {who}'s {rel} work, and in which city do they live?",
                                            "Which company hired {who}'s {rel}, and what city did they move to?"],
                     slots, f"{emp}, in {city}", [p1, p2, p3], [(p1, fam["fam"]), (p2, city), (p3, emp)])
        elif which == "project":
            proj, proj_q = pk.one(PROJECTS)
            colour = pk.one(COLOURS)
            slots = _extend({"proj": proj, "proj_q": proj_q, "colour": colour})
            s1, s2 = self.sessions(2, 0, self.n, gap=3)
            a_ = ["I've started building {a_proj} in the garden, total beginner.", "New project: I'm making {a_proj} from scratch.",
                  "Bought all the wood for my {proj}, no going back now."]
            b_ = ["It's finished! I painted it {colour} in the end, it looks amazing.",
                  "Last coat of paint done. Went with {colour}, no regrets.", "Done at last! {colour_c}, because why not."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "hobbies")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "hobbies")
            self.ask("multi_hop", speaker, ["What colour did {who} paint the {proj_q} they built?",
                                            "Which colour did {who} choose for the {proj_q} they made themselves?"],
                     slots, colour, [p1, p2], [(p1, proj), (p2, colour)])
        elif which == "gift":
            partner = pk.one(FEMALE)
            gift = pk.one(GIFTS)
            slots = _extend({"partner": partner, "gift": gift})
            s1, s2 = self.sessions(2, 0, self.n, gap=1)
            a_ = ["My wife {partner}'s birthday is coming up and I have no idea what to get.",
                  "It's {partner}'s birthday soon, my wife is impossible to buy for.",
                  "I need gift ideas for my wife {partner}, her birthday is in two weeks."]
            b_ = ["I got her {a_gift} in the end, she actually loved it!", "Present sorted: {a_gift}. She was thrilled.",
                  "Went with {a_gift} and it was a hit, phew."]
            p1 = self.part(speaker, s1, wrap(rng, fill(rng.choice(a_), slots)), "family")
            p2 = self.part(speaker, s2, wrap(rng, fill(rng.choice(b_), slots)), "family")
            self.ask("multi_hop", speaker, ["What did {who} give their wife for her birthday?",
                                            "What birthday present did {who} choose for their spouse?"],
                     slots, gift, [p1, p2], [(p1, partner), (p2, gift)])
        else:  # pragma: no cover
            raise ValueError(which)

    # -- distractors ----------------------------------------------------------------------

    def distractor(self, speaker: int) -> None:
        """A third party's fact of a kind the questions ask about, with fresh entities."""
        rng, pk = self.rng, self.pk
        options = []
        if pk.free(FEMALE + MALE) > 4:
            options += ["friend_trip", "friend_move", "friend_pet", "friend_job", "friend_band", "friend_injury"]
        if pk.free(BOOKS) > 1:
            options.append("friend_book")
        if pk.free(RESTAURANTS) > 1:
            options.append("friend_food")
        if not options:
            return
        which = rng.choice(options)
        name = pk.one(FEMALE + MALE) if which not in ("friend_book", "friend_food") else rng.choice(["my neighbour", "a friend", "my flatmate"])
        tmpl: list[str]
        if which == "friend_trip" and pk.free(DESTINATIONS):
            d = pk.one(DESTINATIONS)
            tmpl = [f"My friend {name} just got back from {d} and won't stop posting photos.",
                    f"{name} is off to {d} next month, I'm so jealous.",
                    f"{name} keeps telling me I have to go to {d}, says it changed their life."]
            topic = "travel"
        elif which == "friend_move" and pk.free(CITIES):
            c = pk.one(CITIES)
            tmpl = [f"{name} from my running group just moved to {c}, I'll miss them.",
                    f"My old flatmate {name} lives in {c} now, apparently rent is insane there.",
                    f"{name} is thinking of moving to {c} for a job, wild."]
            topic = "home"
        elif which == "friend_pet":
            p = pk.one(PET_NAMES)
            sp = rng.choice(list(PETS))
            b = rng.choice(PETS[sp])
            tmpl = [f"My neighbour {name} got {a(b)} called {p}, cutest thing ever.",
                    f"{name}'s {sp} {p} escaped again, the whole street was out looking.",
                    f"I was {sp}-sitting {p} for {name} this weekend, so much responsibility."]
            topic = "pets"
        elif which == "friend_job" and pk.free(EMPLOYERS):
            e = pk.one(EMPLOYERS)
            tmpl = [f"My cousin {name} just started at {e}, apparently the canteen is amazing.",
                    f"{name} quit {e} after a week, the manager sounds awful.",
                    f"{name} got headhunted by {e}, good for them."]
            topic = "work"
        elif which == "friend_band" and pk.free(BANDS):
            bnd = pk.one(BANDS)
            tmpl = [f"{name} keeps begging me to go and see {bnd} with them.",
                    f"{name} played me some {bnd} in the car, not really my thing.",
                    f"Apparently {name} queued six hours for {bnd} tickets."]
            topic = "media"
        elif which == "friend_injury" and pk.free(INJURIES):
            inj = pk.one(INJURIES)
            tmpl = [f"{name} fell off a ladder, the poor thing, and hurt their {inj[1]}.",
                    f"My friend {name} is on crutches after {inj[2]}. I'm taking them soup."]
            topic = "health"
        elif which == "friend_book":
            t = pk.one(BOOKS)
            tmpl = [f"{name.capitalize()} lent me {t[0]}, but I haven't started it.",
                    f"Everyone at {name}'s book club is reading {t[0]} right now, not sure it's for me.",
                    f"{name.capitalize()} gave up on {t[0]} halfway through, said it was too slow."]
            topic = "media"
        elif which == "friend_food":
            r = pk.one(RESTAURANTS)
            tmpl = [f"{name.capitalize()} says {r} has gone downhill, such a shame.",
                    f"We walked past {r} and the queue was around the block.",
                    f"{name.capitalize()} had a terrible date at {r}, the story is hilarious."]
            topic = "food"
        else:
            return
        s = self.session(0, self.n)
        self.part(speaker, s, wrap(rng, rng.choice(tmpl), lead_p=0.3), topic)


def relative_time(rng: random.Random, day: datetime) -> tuple[str, datetime, str]:
    """A relative time phrase said on ``day``, the day it points to, and the answer."""
    d = day
    choice = rng.choice(["yesterday", "last_weekend", "last_saturday", "two_days", "last_week", "this_morning",
                         "on_sunday", "couple_weeks"])
    if choice == "yesterday":
        e = d - timedelta(days=1)
        return "yesterday", e, fmt_date(e)
    if choice == "two_days":
        e = d - timedelta(days=2)
        return "two days ago", e, fmt_date(e)
    if choice == "this_morning":
        return "this morning", d, fmt_date(d)
    if choice in ("last_weekend", "last_saturday"):
        back = (d.weekday() - 5) % 7 or 7  # the Saturday before
        e = d - timedelta(days=back)
        if choice == "last_saturday":
            return "last Saturday", e, fmt_date(e)
        return "last weekend", e, f"the weekend before {fmt_date(d)}"
    if choice == "on_sunday":
        back = (d.weekday() - 6) % 7 or 7
        e = d - timedelta(days=back)
        return "on Sunday", e, fmt_date(e)
    if choice == "last_week":
        e = d - timedelta(days=7)
        return "last week", e, f"the week before {fmt_date(d)}"
    e = d - timedelta(days=14)
    return "a couple of weeks ago", e, f"about two weeks before {fmt_date(d)}"


# -- rendering ------------------------------------------------------------------


CHANGE_KINDS = ["city", "job", "pet", "trip", "day", "car", "sport", "bandname", "course"]
TEMPORAL_KINDS = ["race", "concert", "workshop", "milestone", "hike", "camping", "interview", "party"]
MULTI_KINDS = ["baby", "adopt", "trip", "coworker", "recommend", "sibling", "project", "gift"]

# Per speaker, at 28 sessions; scaled with the session count.
PER_SPEAKER = {"single_old": 10, "single_recent": 10, "repeated": 6, "change": 6, "temporal": 7, "multi_hop": 7,
               "filler": 8, "distractor": 9}


def generate(
    seed: int = 0,
    conversations: int = 4,
    *,
    sessions: tuple[int, int] = (24, 32),
    turns: tuple[int, int] = (14, 30),
    months: tuple[int, int] = (9, 14),
) -> list[Conversation]:
    """``conversations`` synthetic conversations; the same arguments give the same output."""
    return [_conversation(seed, i, sessions, turns, months) for i in range(conversations)]


def _conversation(seed: int, index: int, sessions: tuple[int, int], turns: tuple[int, int],
                  months: tuple[int, int]) -> Conversation:
    rng = random.Random(f"lodviz-conversation:{seed}:{index}")
    speakers = [rng.choice(FEMALE), rng.choice(MALE)]
    if rng.random() < 0.5:
        speakers.reverse()
    n = rng.randint(*sessions)
    dates = _dates(rng, n, months)
    plan = Planner(rng, speakers, dates)
    scale = n / 28
    counts = {k: max(1, round(v * scale)) for k, v in PER_SPEAKER.items()}
    both = (0, 1)
    for speaker in both:
        for _ in range(counts["repeated"]):
            plan.repeated(speaker)
    for speaker in both:
        for which in rng.sample(CHANGE_KINDS, min(counts["change"], len(CHANGE_KINDS))):
            plan.change(speaker, which)
    for speaker in both:
        for which in rng.sample(TEMPORAL_KINDS, min(counts["temporal"], len(TEMPORAL_KINDS))):
            plan.temporal(speaker, which)
    for speaker in both:
        kinds = [k for k in MULTI_KINDS if not (k == "gift" and speakers[speaker] in FEMALE)]
        for which in rng.sample(kinds, min(counts["multi_hop"], len(kinds))):
            plan.multi_hop(speaker, which)
    for category, (lo, hi), count in (("single_old", plan.old, counts["single_old"]),
                                      ("single_recent", plan.recent, counts["single_recent"]),
                                      (None, (0, n), counts["filler"])):
        for _ in range(count):
            for speaker in both:
                plan.single(speaker, category, lo, hi)
    for _ in range(counts["distractor"]):
        for speaker in both:
            plan.distractor(speaker)
    return _render(rng, f"conv-{seed}-{index}", speakers, dates, plan, turns)


def _dates(rng: random.Random, n: int, months: tuple[int, int]) -> list[datetime]:
    start = datetime(2022, 1, 3, tzinfo=UTC) + timedelta(days=rng.randint(0, 900))
    span = rng.randint(months[0] * 30, months[1] * 30)
    weights = [rng.lognormvariate(0, 0.7) for _ in range(n - 1)]
    total = sum(weights)
    days = [max(1, round(w / total * span)) for w in weights]
    out, day = [], start
    for i in range(n):
        at = day.replace(hour=rng.randint(8, 21), minute=rng.randint(0, 59))
        out.append(at)
        if i < n - 1:
            day = day + timedelta(days=days[i])
    return out


class _Texts:
    """Keeps every turn of one conversation distinct (identical texts would be one memory)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.seen: set[str] = set()

    def take(self, speaker: str, options: Sequence[str] | Callable[[], str], must: bool = True) -> str | None:
        for _ in range(12):
            text = options() if callable(options) else self.rng.choice(list(options))
            key = " ".join(f"{speaker}: {text}".split())
            if key not in self.seen:
                self.seen.add(key)
                return text
        if not must:
            return None
        base = options() if callable(options) else self.rng.choice(list(options))
        for extra in ("Ha.", "Honestly.", "Anyway.", "Yeah.", "Haha.", "Oh well.", "Seriously.", "Right?", "Hm."):
            text = f"{base} {extra}"
            key = " ".join(f"{speaker}: {text}".split())
            if key not in self.seen:
                self.seen.add(key)
                return text
        i = 2
        while True:
            text = f"{base} ({i})"
            key = " ".join(f"{speaker}: {text}".split())
            if key not in self.seen:
                self.seen.add(key)
                return text
            i += 1


def _render(rng: random.Random, cid: str, speakers: list[str], dates: list[datetime], plan: Planner,
            turns_range: tuple[int, int]) -> Conversation:
    texts = _Texts(rng)
    by_session: list[list[Part]] = [[] for _ in dates]
    for part in plan.parts:
        by_session[part.session].append(part)
    pid_to_turn: dict[str, str] = {}
    part_text = {part.pid: part.text for part in plan.parts}
    facts: dict[str, list[str]] = {}
    sessions: list[Session] = []
    for si, started in enumerate(dates):
        parts = by_session[si]
        rng.shuffle(parts)
        parts.sort(key=lambda p: p.order)
        wanted = rng.randint(*turns_range)
        raw = round(wanted * 1.2)  # some messages are joined into one turn
        for attempt in range(8):
            seen = set(texts.seen)
            joined = _session_lines(rng, texts, speakers, si, parts, raw)
            if turns_range[0] <= len(joined) <= turns_range[1] or attempt == 7:
                break
            texts.seen = seen  # try again with a corrected length
            raw += wanted - len(joined)
        at = started
        session_turns = []
        for ti_, (spk, text, pids) in enumerate(joined, start=1):
            turn_id = f"D{si + 1}:{ti_}"
            for pid in pids:
                pid_to_turn[pid] = turn_id
                facts.setdefault(turn_id, []).append(part_text[pid])
            session_turns.append(Turn(turn_id, speakers[spk], text, at))
            at = at + timedelta(seconds=rng.randint(20, 60) + 3 * len(text.split()))
        sessions.append(Session(si + 1, started, session_turns))
    questions = []
    for i, q in enumerate(plan.questions, start=1):
        questions.append(
            Question(
                qid=f"{cid}-q{i}",
                text=q.text,
                evidence=[pid_to_turn[p] for p in q.evidence],
                category=q.category,
                answer=q.answer,
                keys=[[pid_to_turn[p], k] for p, k in q.keys],
                speaker=speakers[q.speaker],
            )
        )
    return Conversation(cid, list(speakers), sessions, questions, facts)


def _session_lines(rng: random.Random, texts: _Texts, speakers: list[str], si: int, parts: list[Part],
                   target: int) -> list[tuple[int, str, list[str]]]:
    """One session's turns: (speaker index, text, part ids the turn carries)."""
    first = rng.randint(0, 1)  # who opens
    lines: list[tuple[int, str, str | None]] = []  # (speaker, text, part id)

    def say(spk: int, options: Sequence[str] | Callable[[], str]) -> None:
        other = speakers[1 - spk]

        def make() -> str:
            t = options() if callable(options) else rng.choice(list(options))
            return t.replace("{p}", other)

        text = texts.take(speakers[spk], make)
        assert text is not None
        lines.append((spk, text, None))

    say(first, OPEN_FIRST if si == 0 else OPEN)
    say(1 - first, OPEN_REPLY)
    # blocks: each fact part becomes a small exchange; small talk fills the rest
    blocks: list[list[tuple[int, Any, str | None]]] = []
    budget = target - 4
    fact_turns = 0
    for part in parts:
        block = _fact_block(rng, part)
        blocks.append(block)
        fact_turns += len(block)
    if fact_turns > budget:  # trim the optional turns of each block
        for block in blocks:
            while len(block) > 2 and fact_turns > budget:
                block.pop()
                fact_turns -= 1
    spare = max(0, budget - fact_turns)
    while spare >= 2:
        block = _small_talk(rng, rng.randint(0, 1))
        if len(block) > spare:
            block = block[:spare]
        blocks.append(block)
        spare -= len(block)
    # fact blocks keep their order, small talk is interleaved
    facts = [b for b in blocks if any(pid for _, _, pid in b)]
    talk = [b for b in blocks if not any(pid for _, _, pid in b)]
    merged: list[list[Any]] = []
    fi = ti = 0
    while fi < len(facts) or ti < len(talk):
        if ti < len(talk) and (fi >= len(facts) or rng.random() < len(talk) / (len(talk) + len(facts))):
            merged.append(talk[ti])
            ti += 1
        else:
            merged.append(facts[fi])
            fi += 1
    for block in merged:
        for spk, options, pid in block:
            if pid is not None:
                text = texts.take(speakers[spk], [options])
                assert text is not None
                lines.append((spk, text, pid))
            else:
                say(spk, options)
    closer = 1 - lines[-1][0]
    say(closer, CLOSE)
    say(1 - closer, CLOSE_REPLY)
    # one speaker's consecutive messages mostly become one turn (up to ~90 words)
    joined: list[tuple[int, str, list[str]]] = []
    for spk, text, pid in lines:
        if joined and joined[-1][0] == spk and words(joined[-1][1]) + words(text) <= 90 and rng.random() < 0.9:
            joined[-1] = (spk, f"{joined[-1][1]} {text}", joined[-1][2] + ([pid] if pid else []))
        else:
            joined.append((spk, text, [pid] if pid else []))
    for i, (spk, text, pids) in enumerate(joined):  # nobody says fewer than four words
        while words(text) < 4:
            text += " " + rng.choice(["Tell me more!", "I mean it.", "Ha, honestly.", "Go on then.", "No kidding.",
                                      "Seriously though.", "Love it."])
        joined[i] = (spk, text, pids)
    return joined


def _fact_block(rng: random.Random, part: Part) -> list[tuple[int, Any, str | None]]:
    owner, other = part.speaker, 1 - part.speaker
    topic = TOPICS[part.topic]
    block: list[tuple[int, Any, str | None]] = []
    if rng.random() < 0.35:
        block.append((other, topic["ask"], None))
    block.append((owner, part.text, part.pid))
    react = topic["react"] if rng.random() < 0.8 else GENERIC_REACT

    def reaction() -> str:
        text = rng.choice(react)
        roll = rng.random()
        if roll < 0.4 and not text.endswith("?"):
            text += " " + rng.choice(FOLLOW)
        elif roll < 0.7:
            text += " " + rng.choice(topic["relate"])
        return text

    def detail() -> str:
        text = _detail(rng, topic)
        if rng.random() < 0.3:
            text += " " + rng.choice(["What about you?", "Anyway, how about you?", "You?", "How's your side of things?",
                                      "Has that ever happened to you?", "Do you know what I mean?"])
        return text

    block.append((other, reaction, None))
    if rng.random() < 0.6:
        block.append((owner, detail, None))
        if rng.random() < 0.4:
            block.append((other, topic["relate"], None))
    return block


def _detail(rng: random.Random, topic: dict[str, list[str]]) -> str:
    text = rng.choice(topic["detail"])
    roll = rng.random()
    if roll < 0.25:  # the occasional ramble
        more = [t for t in topic["detail"] if t != text]
        text = " ".join([text] + rng.sample(more, min(2 if roll > 0.08 else 4, len(more))))
    return text


def _small_talk(rng: random.Random, starter: int) -> list[tuple[int, Any, str | None]]:
    opener, reply, follow, more = rng.choice(SMALLTALK)

    def extended(pool: list[str], p: float) -> Callable[[], str]:
        def make() -> str:
            text = rng.choice(pool)
            if rng.random() < p:
                text += " " + rng.choice(more)
            return text
        return make

    block: list[tuple[int, Any, str | None]] = [(starter, extended(opener, 0.6), None), (1 - starter, extended(reply, 0.45), None)]
    if rng.random() < 0.6:
        block.append((starter, extended(follow, 0.35), None))
    if rng.random() < 0.3:
        block.append((1 - starter, CHITCHAT_SINGLE, None))
    return block


# -- checks and stats -------------------------------------------------------------


def check(conversation: Conversation) -> list[str]:
    """Problems with a conversation's questions (an empty list when all is well)."""
    problems = []
    index = conversation.turn_index()
    texts = [t.text for t in conversation.turns()]
    if len(set(f"{t.speaker}: {t.text}" for t in conversation.turns())) != len(texts):
        problems.append("duplicate turn texts")
    for q in conversation.questions:
        if not q.evidence:
            problems.append(f"{q.qid}: no evidence")
        for tid in q.evidence:
            if tid not in index:
                problems.append(f"{q.qid}: unknown turn {tid}")
        for tid, key in q.keys:
            if tid not in index or key.lower() not in index[tid].text.lower():
                problems.append(f"{q.qid}: {key!r} not in {tid}")
        ev = " ".join(index[t].text.lower() for t in q.evidence if t in index)
        if q.category != "temporal" and q.category != "multi_hop" and q.answer.lower() not in ev:
            problems.append(f"{q.qid}: answer {q.answer!r} not in its evidence")
        if q.category not in CATEGORIES:
            problems.append(f"{q.qid}: unknown category {q.category}")
    return problems


def stats(conversations: Sequence[Conversation]) -> dict[str, Any]:
    out: dict[str, Any] = {"conversations": []}
    for c in conversations:
        turns = c.turns()
        lengths = sorted(words(t.text) for t in turns)
        cats: dict[str, int] = {k: 0 for k in CATEGORIES}
        for q in c.questions:
            cats[q.category] += 1
        out["conversations"].append({
            "id": c.id,
            "speakers": c.speakers,
            "sessions": len(c.sessions),
            "turns": len(turns),
            "turns_per_session": [min(len(s.turns) for s in c.sessions), max(len(s.turns) for s in c.sessions)],
            "days": (c.sessions[-1].started_at - c.sessions[0].started_at).days,
            "words_per_turn": {"min": lengths[0], "median": lengths[len(lengths) // 2], "max": lengths[-1],
                               "share_10_40": round(sum(1 for w in lengths if 10 <= w <= 40) / len(lengths), 2)},
            "questions": len(c.questions),
            "categories": cats,
        })
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate synthetic long conversations and print a sample.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--json", default=None, help="write the conversations to this file")
    parser.add_argument("--show-sessions", type=int, default=2)
    parser.add_argument("--show-questions", type=int, default=14)
    args = parser.parse_args(argv)
    convs = generate(args.seed, args.conversations)
    print(json.dumps(stats(convs), indent=1))
    for c in convs:
        problems = check(c)
        print(f"{c.id}: {len(problems)} problems" + (": " + "; ".join(problems[:5]) if problems else ""))
    c = convs[0]
    for s in c.sessions[: args.show_sessions]:
        print(f"\n=== session {s.index}, {s.started_at:%A %d %B %Y %H:%M} ===")
        for t in s.turns:
            print(f"{t.turn_id:>7} {t.speaker}: {t.text}")
    index = c.turn_index()
    rng = random.Random(1)
    print("\n=== questions ===")
    for q in rng.sample(c.questions, min(args.show_questions, len(c.questions))):
        print(f"\n[{q.category}] {q.text}  -> {q.answer}")
        for tid in q.evidence:
            print(f"    {tid} {index[tid].speaker}: {index[tid].text}")
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(to_json(convs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
