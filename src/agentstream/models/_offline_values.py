"""Values built from a JSON Schema and a prompt, for the offline model (``models/_offline.py``).

A tool's arguments and a structured answer are both "a value valid against this schema, taken from
what the user wrote where the prompt says it": quoted strings, numbers, enum members, e-mail
addresses, URLs, dates, words after a preposition (``in Paris``, ``to ACC-1``), or the words left
once the tool's own name is taken out (``research tides`` → ``tides``). What the prompt does not
say comes from the schema: ``default``, ``const``, the first enum member, the minimum.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Evidence", "build_value", "words_of"]

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?<![A-Za-z])'([^']+)'(?![A-Za-z])")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://[^\s\"'<>]+[^\s\"'<>.,;:!?)]")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TOKEN = re.compile(r"[^\s,;!?\"“”()]+")
_NUMBER_WORDS = {
    w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
STOPWORDS = frozenset(
    "a an the is are was were be been am i me my you your we our it its this that these those of to in "
    "on at for from by with about into over under and or but not no do does did can could would should "
    "will shall may might must please what whats what's which who whom whose when where why how tell "
    "give show get find make let lets let's some any all just now today tomorrow there here them they "
    "he she his her up out if then than so as use using call run want like need look read see check "
    "know".split()
)
_PREPOSITIONS = ("in", "at", "to", "for", "about", "on", "from", "near", "of", "with", "called", "named")
_PHRASE_STOP = frozenset(
    "and or but for with from to in at on by about today tomorrow now please then the a an".split()
)
# which prepositions introduce a value for a property of that name, most likely first
_PLACE_NAMES = (
    "city",
    "location",
    "place",
    "country",
    "town",
    "restaurant",
    "destination",
    "address",
    "where",
)
_TOPIC_NAMES = ("topic", "query", "subject", "q", "search", "term", "keyword", "question", "about")
_TEXT_NAMES = (
    "text",
    "prompt",
    "message",
    "content",
    "input",
    "body",
    "note",
    "description",
    "reason",
    "comment",
    "feedback",
    "answer",
    "explanation",
)


def words_of(text: str) -> list[str]:
    """The lower-cased words of ``text`` (``"book_table"`` and ``"bookTable"`` give ``book``, ``table``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text).replace("_", " ").replace("-", " ")
    return [w.lower() for w in _WORD.findall(spaced)]


def stem(word: str) -> str:
    """A crude stem so ``rainbows`` meets ``rainbow`` and ``searching`` meets ``search``."""
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@dataclass
class Evidence:
    """What a prompt offers to fill a schema, consumed as values are taken (each used once)."""

    text: str
    skip_words: frozenset[str] = frozenset()
    """Words that name the tool itself, never a value (``weather`` in "the weather in Paris")."""
    known: dict[str, Any] = field(default_factory=dict)
    """Values by lower-cased key (a tool result's fields), preferred for a property of that name."""
    used: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(self.text)]
        self.numbers = [(m.start(), m.group(0)) for m in _NUMBER.finditer(self.text)]
        self.numbers += [
            (m.start(), str(_NUMBER_WORDS[m.group(0).lower()]))
            for m in re.finditer(r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", self.text, re.I)
        ]
        self.numbers.sort()

    def take(self, value: str) -> str:
        self.used.add(value.lower())
        return value

    def fresh(self, values: Iterable[str]) -> str | None:
        return next((v for v in values if v and v.lower() not in self.used), None)


def _resolve(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a local ``$ref`` followed and the first non-null ``anyOf``/``oneOf`` branch taken."""
    for _ in range(32):  # a bound, not a loop over a cycle of refs
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for key in ref[2:].split("/"):
                target = (
                    target.get(key.replace("~1", "/").replace("~0", "~"), {})
                    if isinstance(target, dict)
                    else {}
                )
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **rest}
            continue
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            chosen = next(
                (b for b in branches if isinstance(b, dict) and b.get("type") != "null"), branches[0]
            )
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            schema = {**rest, **chosen}
            continue
        if isinstance(schema.get("allOf"), list):
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = _resolve(part, root)
                merged["properties"] = {**merged.get("properties", {}), **part.get("properties", {})}
                merged["required"] = [*merged.get("required", []), *part.get("required", [])]
                merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
            schema = merged
            continue
        return schema
    return schema if isinstance(schema, dict) else {}


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    if schema.get("enum"):
        return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
            type(schema["enum"][0]), "string"
        )
    return "string"


def build_value(
    schema: Any,
    evidence: Evidence,
    *,
    name: str = "",
    every_property: bool,
    root: dict[str, Any] | None = None,
) -> Any:
    """A value valid against ``schema`` built from ``evidence``.

    ``every_property``: fill optional properties too (structured output); otherwise only the
    required ones and those the prompt names (tool arguments).
    """
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    known = _known(evidence, name, schema)
    if known is not None:
        return known
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _enum(enum, schema, evidence)
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, evidence, every_property=every_property, root=root)
    if kind == "array":
        return _array(schema, evidence, name=name, every_property=every_property, root=root)
    if kind in ("integer", "number"):
        return _number(schema, evidence, name, integer=kind == "integer")
    if kind == "boolean":
        return _boolean(schema, evidence, name)
    if kind == "null":
        return None
    return _string(schema, evidence, name)


def _known(evidence: Evidence, name: str, schema: dict[str, Any]) -> Any:
    value = evidence.known.get(name.lower()) if name else None
    if value is None:
        return None
    kind = _type_of(schema)
    fits = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }.get(kind, False)
    enum = schema.get("enum")
    return value if fits and (not isinstance(enum, list) or value in enum) else None


def _object(schema: dict[str, Any], evidence: Evidence, *, every_property: bool, root: dict[str, Any]) -> Any:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out: dict[str, Any] = {}
    for key, sub in properties.items():
        if key in required or every_property:
            out[key] = build_value(sub, evidence, name=key, every_property=every_property, root=root)
            continue
        value = _optional(key, _resolve(sub, root), evidence, root)
        if value is not None:
            out[key] = value
    return out


def _optional(key: str, schema: dict[str, Any], evidence: Evidence, root: dict[str, Any]) -> Any:
    """An optional argument, only when the prompt names it (else the tool's own default applies)."""
    enum = schema.get("enum")
    if isinstance(enum, list):
        return next((v for v in enum if isinstance(v, str) and _mentions(evidence.text, v)), None)
    key_words = words_of(key)
    if not key_words or not all(_mentions(evidence.text, w) for w in key_words):
        return None
    kind = _type_of(schema)
    if kind in ("integer", "number"):
        near = _number_near(evidence, key_words)
        return _number(schema, evidence, key, integer=kind == "integer") if near is not None else None
    if kind == "boolean":
        return _boolean(schema, evidence, key)
    if kind == "string":
        after = _after_name(evidence, key_words)
        return evidence.take(after) if after else None
    return None


def _mentions(text: str, word: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text, re.I) is not None


def _enum(enum: list[Any], schema: dict[str, Any], evidence: Evidence) -> Any:
    mentioned = [v for v in enum if isinstance(v, str) and _mentions(evidence.text, v)]
    mentioned += [v for v in enum if not isinstance(v, str | bool) and _mentions(evidence.text, str(v))]
    if mentioned:
        return mentioned[0]
    return schema["default"] if "default" in schema and schema["default"] in enum else enum[0]


def _number_near(evidence: Evidence, key_words: list[str]) -> str | None:
    """A number within three words of the property's name (``for 4 people``, ``amount 50``)."""
    for word in key_words:
        for m in re.finditer(r"(?<![\w-])" + re.escape(word), evidence.text, re.I):
            for start, number in evidence.numbers:
                gap = evidence.text[min(start, m.start()) : max(start, m.end())]
                if len(gap.split()) <= 3 and f"#{start}" not in evidence.used:
                    return number
    return None


def _number(schema: dict[str, Any], evidence: Evidence, name: str, *, integer: bool) -> int | float:
    chosen = _number_near(evidence, words_of(name)) if name else None
    fraction = isinstance(schema.get("maximum"), int | float) and schema["maximum"] <= 1
    if chosen is None and not fraction:
        # any number the prompt gives, but not for a score or a confidence (0..1): a "1" in the
        # text is not a certainty
        chosen = next((n for s, n in evidence.numbers if f"#{s}" not in evidence.used), None)
    if chosen is not None:
        start = next(s for s, n in evidence.numbers if n == chosen and f"#{s}" not in evidence.used)
        evidence.used.add(f"#{start}")
        value: float = float(chosen)
    elif isinstance(schema.get("default"), int | float):
        value = float(schema["default"])
    else:
        value = float(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
        value = value + (1 if "exclusiveMinimum" in schema else 0)
        if value <= 0 and "minimum" not in schema and "exclusiveMinimum" not in schema:
            value = 1.0
    return _clamp(value, schema, integer=integer)


def _clamp(value: float, schema: dict[str, Any], *, integer: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = schema["exclusiveMinimum"] + (1 if integer else 1e-6)
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = schema["exclusiveMaximum"] - (1 if integer else 1e-6)
    if isinstance(low, int | float):
        value = max(value, low)
    if isinstance(high, int | float):
        value = min(value, high)
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = round(value / step) * step
    if integer:
        return round(value)
    return int(value) if value == int(value) else value


def _boolean(schema: dict[str, Any], evidence: Evidence, name: str) -> bool:
    words = words_of(name)
    for word in words:
        m = re.search(
            r"(\b(?:no|not|don't|dont|without|never)\s+(?:\w+\s+)?)?\b" + re.escape(word) + r"\b",
            evidence.text,
            re.I,
        )
        if m:
            return m.group(1) is None
    if re.search(r"\b(?:yes|approve|approved|confirm|true)\b", evidence.text, re.I) and not re.search(
        r"\b(?:no|not|deny|false)\b", evidence.text, re.I
    ):
        return True
    return bool(schema.get("default", False))


def _array(
    schema: dict[str, Any], evidence: Evidence, *, name: str, every_property: bool, root: dict[str, Any]
) -> list[Any]:
    items = _resolve(schema.get("items", {}), root)
    low = schema.get("minItems", 0)
    high = schema.get("maxItems")
    out: list[Any] = []
    if _type_of(items) == "string" and "enum" not in items:
        listed = _listed(evidence.text)
        out = [evidence.take(v) for v in listed if v.lower() not in evidence.used]
    if not out:
        out = [build_value(items, evidence, name=name, every_property=every_property, root=root)]
    while len(out) < low:
        out.append(build_value(items, evidence, name=name, every_property=every_property, root=root))
    if schema.get("uniqueItems"):
        out = [v for i, v in enumerate(out) if v not in out[:i]] or out[:1]
    return out[:high] if isinstance(high, int) else out


def _listed(text: str) -> list[str]:
    """``eggs, flour and milk`` → the three items: a list after a colon, else a run of single words
    joined by commas and a final ``and``."""
    if ":" in text:
        parts = [p.strip(" .!?") for p in re.split(r",\s*|\s+and\s+", text.split(":", 1)[1])]
        parts = [p for p in parts if p]
        if len(parts) >= 2 and all(len(p.split()) <= 4 for p in parts):
            return parts
    run = re.search(r"[\w-]+(?:,\s*[\w-]+)+,?\s+and\s+[\w-]+|[\w-]+\s+and\s+[\w-]+", text)
    if run is None:
        return []
    return [p for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", run.group(0)) if p]


def _string(schema: dict[str, Any], evidence: Evidence, name: str) -> str:
    value = _string_candidate(schema, evidence, name)
    if value is None:
        value = (
            schema["default"] if isinstance(schema.get("default"), str) else _fallback_string(schema, name)
        )
    else:
        evidence.take(value)
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(high, int):
        value = value[:high]
    if isinstance(low, int) and len(value) < low:
        value = value + "x" * (low - len(value))
    return value


def _fallback_string(schema: dict[str, Any], name: str) -> str:
    fmt = schema.get("format")
    if fmt == "date":
        return _dt.date.today().isoformat()
    if fmt == "date-time":
        return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if fmt == "email":
        return "user@example.com"
    if fmt in ("uri", "url"):
        return "https://example.com/"
    if fmt == "uuid":
        return "00000000-0000-4000-8000-000000000000"
    return name.replace("_", " ") if name else "value"


_FORMAT_BY_NAME = {
    "email": "email",
    "mail": "email",
    "url": "uri",
    "uri": "uri",
    "link": "uri",
    "website": "uri",
    "date": "date",
    "day": "date",
}


def _string_candidate(schema: dict[str, Any], evidence: Evidence, name: str) -> str | None:
    fmt, pattern = schema.get("format"), schema.get("pattern")
    if fmt is None and pattern is None:
        # an "email" field without a format still wants the address the prompt gives
        inferred = next((_FORMAT_BY_NAME[w] for w in words_of(name) if w in _FORMAT_BY_NAME), None)
        found = _string_candidate({"format": inferred}, evidence, "") if inferred else None
        if found:
            return found
    if fmt == "email":
        return evidence.fresh(_EMAIL.findall(evidence.text))
    if fmt in ("uri", "url"):
        return evidence.fresh(_URL.findall(evidence.text))
    if fmt == "date":
        return evidence.fresh(_DATE.findall(evidence.text))
    if isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = None
        if compiled is not None:
            tokens = [t.strip(".:") for t in _TOKEN.findall(evidence.text)] + evidence.quoted
            return evidence.fresh(t for t in tokens if compiled.search(t))
    if evidence.fresh(evidence.quoted):
        return evidence.fresh(evidence.quoted)
    key_words = words_of(name)
    tokens = [t.strip(".:") for t in _TOKEN.findall(evidence.text)]
    shape = _example_shape(schema.get("description"))
    if shape is not None:
        found = evidence.fresh(t for t in tokens if shape.fullmatch(t))
        if found:
            return found
    if key_words and key_words[-1] in _ID_WORDS:
        found = evidence.fresh(t for t in tokens if _IDENTIFIER.fullmatch(t) and t.lower() not in key_words)
        if found:
            return found
    after = _after_name(evidence, key_words) if key_words else None
    if after:
        return after
    lowered = name.lower()
    if any(w in _TEXT_NAMES for w in key_words) and lowered not in _PLACE_NAMES:
        rest = _remaining(evidence)
        return rest if rest and lowered in ("query", "q", "search", "term") else evidence.text.strip() or None
    order = _preposition_order(lowered, key_words)
    for preposition in order:
        phrase = evidence.fresh(_phrases_after(evidence.text, preposition, frozenset(key_words)))
        if phrase:
            return phrase
    return _remaining(evidence)


_ID_WORDS = frozenset("id ids code number no ref reference sku key slug".split())
_IDENTIFIER = re.compile(r"(?=[\w-]*\d)[\w-]+|[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)+")
_EXAMPLE = re.compile(r"(?:such as|e\.g\.|for example|like)\s+[\"'`]?([\w-]+)", re.I)


def _example_shape(description: Any) -> re.Pattern[str] | None:
    """``"The order's id, such as ORD-7."`` → the shape of ``ORD-7`` (letters, digits, the dash)."""
    if not isinstance(description, str):
        return None
    m = _EXAMPLE.search(description)
    if m is None or not any(c.isdigit() for c in m.group(1)):
        return None
    pattern = "".join(
        "[A-Z]" if c.isupper() else "[a-z]" if c.isalpha() else r"\d" if c.isdigit() else re.escape(c)
        for c in m.group(1)
    )
    return re.compile(re.sub(r"(\[A-Z\]|\[a-z\]|\\d)(?:\1)+", r"\1+", pattern).replace(r"\d", r"\d+"))


def _preposition_order(lowered: str, key_words: list[str]) -> tuple[str, ...]:
    if lowered in _PLACE_NAMES or any(w in _PLACE_NAMES for w in key_words):
        return ("in", "at", "to", "near", "from", "for", "called", "named")
    if any(w in ("to", "recipient", "account", "receiver", "email", "user", "person") for w in key_words):
        return ("to", "for", "named", "called")
    if lowered in _TOPIC_NAMES or any(w in _TOPIC_NAMES for w in key_words):
        return ("about", "on", "for", "of")
    return ("called", "named", *_PREPOSITIONS)


def _after_name(evidence: Evidence, key_words: list[str]) -> str | None:
    """``order ORD-7``, ``name is Ada``, ``city: Paris``: the words right after the property's name."""
    name = r"[\s_-]*".join(re.escape(w) for w in key_words)
    found = re.search(
        r"(?<![\w-])"
        + name
        + r"(?:\s+(?:is|=|of)|\s*[:=])?\s+([\"“']?)([^\s,;!?\"”']+(?-i:\s+[A-Z][\w-]*)*)\1",
        evidence.text,
        re.I,
    )
    if not found:
        return None
    value = found.group(2).rstrip(".")
    if value.lower() in STOPWORDS or value.lower() in evidence.used or value.lower() in evidence.skip_words:
        return None
    return value


def _phrases_after(text: str, preposition: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """``in New York today`` → ``New York``: the words after ``preposition`` until a stop word."""
    out = []
    for m in re.finditer(r"(?<![\w-])" + preposition + r"\s+(.+)", text, re.I):
        words: list[str] = []
        for token in m.group(1).split():
            clean = token.strip("?.!,;:\"“”'()")
            if not clean or (clean.lower() in _PHRASE_STOP and words):
                break
            if clean.lower() in ("the", "a", "an", "my", "our") or clean.lower() in skip:
                continue
            words.append(clean)
            if token != clean and token.rstrip("?.!,;:\"”')") != token:
                break
            if len(words) == 4:
                break
        phrase = " ".join(words)
        # "for 5 days" is a number's phrase, not a name's
        if phrase and phrase.lower() not in STOPWORDS and not phrase[0].isdigit():
            out.append(phrase)
    return out


def _remaining(evidence: Evidence) -> str | None:
    """The prompt's words minus stop words, the tool's name and values already used."""
    words = [t.strip("?.!,;:\"“”'()") for t in evidence.text.split()]
    kept = [
        w
        for w in words
        if w
        and w.lower() not in STOPWORDS
        and w.lower() not in evidence.skip_words
        and stem(w.lower()) not in evidence.skip_words
        and w.lower() not in evidence.used
    ]
    return " ".join(kept) or None
