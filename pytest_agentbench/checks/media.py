"""`media`: MediaStore images before and after the run -> the original kept, the new image's shape -> Check.

```yaml
- kind: media
  name: cropped
  original: {displayName: beach.png, width: 1200}   # must be there before, and still this wide after
  added: {count: 1, square: true, maxSide: 800}     # images added after the before-snapshot
  # or added: {count: 1, width: 800, height: 1200}  # an exact size (a rotated copy), within tolerancePx
  tolerancePx: 1                                    # for square and maxSide (default 1)
```

Seed 001's crop check: "the original still 1200 wide and a new image, added after a baseline,
that is square and at most 800 px, within 1 px". New images are those whose `_id` the before-
snapshot did not have; the whole difference is judged, so a deleted image fails the check too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import Check, CheckContext, DeviceReads, Read, failed, passed, show
from pytest_agentbench.checks.content import rows_snapshot
from pytest_agentbench.checks.provider import query_read

KIND = "media"
USES_BEFORE = True
IMAGES_URI = "content://media/external/images/media"
COLUMNS = ("_id", "_display_name", "_data", "width", "height")


@dataclass(frozen=True)
class Spec:
    name: str
    uri: str = IMAGES_URI
    original_name: str | None = None
    original_width: int | None = None
    original_height: int | None = None
    added_count: int = 1
    square: bool = False
    max_side: int | None = None
    min_side: int | None = None
    width: int | None = None
    height: int | None = None
    tolerance_px: int = 1

    def describe(self) -> str:
        parts = []
        if self.original_name:
            size = " and ".join(f"{what} {value}" for what, value in (("width", self.original_width), ("height", self.original_height)) if value)
            parts.append(f"the original {self.original_name} still there{' with ' + size if size else ''}")
        shape = [word for word, on in (("square", self.square),) if on]
        if self.max_side:
            shape.append(f"at most {self.max_side} px")
        if self.min_side:
            shape.append(f"at least {self.min_side} px")
        if self.width or self.height:
            shape.append(f"{self.width or 'any'} wide and {self.height or 'any'} high")
        fit = f" ({', '.join(shape)}, within {self.tolerance_px} px)" if shape else ""
        parts.append(f"{self.added_count} image{'s' if self.added_count != 1 else ''} added{fit}")
        return "; ".join(parts)


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `media` entry beyond the schema's: none (its URI, name and count are the schema's patterns)."""
    return []


def _pixels(value: Any) -> int | None:
    # A seeded instance fills a `{param}` as text ("800"); the schema let only that or an integer
    # through. The template's own `{param}` has no number yet (None: never judged, only watched).
    if isinstance(value, str):
        return int(value) if value.isdigit() else None
    return value


def parse(entry: Mapping[str, Any]) -> Spec:
    """A validated `verify.device` entry -> Spec."""
    original = entry.get("original") or {}
    added = entry.get("added") or {}
    return Spec(
        name=entry["name"], uri=entry.get("uri", IMAGES_URI),
        original_name=original.get("displayName"), original_width=_pixels(original.get("width")),
        original_height=_pixels(original.get("height")), added_count=added.get("count", 1),
        square=bool(added.get("square", False)), max_side=_pixels(added.get("maxSide")), min_side=_pixels(added.get("minSide")),
        width=_pixels(added.get("width")), height=_pixels(added.get("height")),
        tolerance_px=entry.get("tolerancePx", 1),
    )


def reads(spec: Spec) -> tuple[Read, ...]:
    return (query_read(spec.uri, COLUMNS),)


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    raw = device.get(reads(spec)[0].key)
    data = rows_snapshot(raw.text if raw else None, COLUMNS, f"MediaStore ({spec.uri})", raw)
    if "rows" in data:
        data["rows"] = [_typed(row) for row in data["rows"]]
    return data


def _typed(row: Mapping[str, Any]) -> dict[str, Any]:
    def number(value: Any) -> int | None:
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    return {"id": row["_id"], "name": row["_display_name"], "path": row["_data"],
            "width": number(row["width"]), "height": number(row["height"])}


def _shape_problems(spec: Spec, image: Mapping[str, Any]) -> list[str]:
    width, height = image["width"], image["height"]
    if width is None or height is None:
        return [f"{image['name']} has no size in MediaStore"]
    problems, slack = [], spec.tolerance_px
    if spec.square and abs(width - height) > slack:
        problems.append(f"{image['name']} is {width}x{height}, not square")
    if spec.max_side and max(width, height) > spec.max_side + slack:
        problems.append(f"{image['name']} is {width}x{height}, larger than {spec.max_side} px")
    if spec.min_side and min(width, height) < spec.min_side - slack:
        problems.append(f"{image['name']} is {width}x{height}, smaller than {spec.min_side} px")
    if (spec.width and abs(width - spec.width) > slack) or (spec.height and abs(height - spec.height) > slack):
        problems.append(f"{image['name']} is {width}x{height}, not {spec.width or 'any'}x{spec.height or 'any'}")
    return problems


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """The original unchanged, nothing deleted, and exactly `count` new images of the wanted shape."""
    expected = spec.describe()
    for moment, data in (("before the run", before), ("after the run", after)):
        if data is None:
            return failed(KIND, spec.name, expected, f"there is no MediaStore snapshot {moment}")
        if "error" in data:
            return failed(KIND, spec.name, expected, f"{moment}: {data['error']}")
    was = {image["id"]: image for image in before["rows"]}  # type: ignore[index]
    now = {image["id"]: image for image in after["rows"]}
    added = [image for image_id, image in now.items() if image_id not in was]
    deleted = [image for image_id, image in was.items() if image_id not in now]
    problems: list[str] = []
    if spec.original_name:
        originals = [image for image in was.values() if image["name"] == spec.original_name]
        if not originals:
            problems.append(f"the original {spec.original_name} is not in MediaStore before the run (was it seeded?)")
        else:
            kept = now.get(originals[0]["id"])
            if kept is None:
                problems.append(f"the original {spec.original_name} was deleted")
            else:
                for what, want in (("width", spec.original_width), ("height", spec.original_height)):
                    if want is not None and kept[what] != want:
                        problems.append(f"the original {spec.original_name} is now {kept['width']}x{kept['height']}, "
                                        f"not {want} {'wide' if what == 'width' else 'high'}")
    deleted_names = [image["name"] for image in deleted if image["name"] != spec.original_name]
    if deleted_names:
        problems.append(f"images deleted during the run: {', '.join(deleted_names)}")
    if len(added) != spec.added_count:
        problems.append(f"{len(added)} image{'s' if len(added) != 1 else ''} added, not {spec.added_count}")
    for image in added:
        problems += _shape_problems(spec, image)
    seen = "added: " + (show([f"{i['name']} {i['width']}x{i['height']}" for i in added]) if added else "none")
    if problems:
        return failed(KIND, spec.name, expected, "; ".join(problems) + f" ({seen})")
    return passed(KIND, spec.name, expected, seen)
