"""Photos declared as data: a grid of MediaStore images, a viewer and an editor that crops to an aspect ratio and rotates.

"Rotate" turns the result a quarter clockwise per tap (four taps: back to upright); the crop is
applied first, then the rotation.

"Save copy" writes the crop as a new PNG next to the original (`NAME-edited.png`, then `-edited-2`,
...) and adds it to MediaStore, owned by Photos; the original is untouched. "Save" overwrites the
original file in place (same MediaStore row, new size), which is what a careless edit does.
"""

from __future__ import annotations

import posixpath

from ..images import photo_png
from ..providers.media import scan_file
from ..ui import Button, Each, Image, Radio, Row, Text, Title
from .model import App, AppContext, Screen, SyncJob

PACKAGE = "com.google.android.apps.photos"
IMAGES = "content://media/external/images/media"
ASPECTS = {"Original": None, "Square": (1, 1), "4:3": (4, 3), "3:4": (3, 4), "16:9": (16, 9)}


def crop_box(width: int, height: int, aspect: tuple[int, int] | None) -> tuple[int, int, int, int]:
    """(left, top, width, height) of the largest centred crop with the aspect ratio (None keeps the image)."""
    if aspect is None:
        return 0, 0, width, height
    a, b = aspect
    if width * b > height * a:  # too wide: keep the height
        new_width, new_height = round(height * a / b), height
    else:
        new_width, new_height = width, round(width * b / a)
    return (width - new_width) // 2, (height - new_height) // 2, new_width, new_height


class PhotosApp(App):
    package = PACKAGE
    label = "Photos"
    # Photos' backup job: its wake lock is held only once the job runs (wakelock-restrict's seed).
    sync_job = SyncJob(1002, "com.google.android.apps.photos/.backup.BackupJobService", "Photos:BackupSync")
    activity = "com.google.android.apps.photos.home.HomeActivity"
    version_name = "6.72.0.608390436"
    version_code = 48367
    min_sdk = 30
    start_route = "main"
    screens = {
        "main": Screen("main", (
            Title("Photos"),
            Text("No photos yet", when="!has_photos"),
            Each("photos", Row("{photo_name}", on_tap="open_photo", arg="{photo_id}", summary="{photo_size}",
                               desc="Photo {photo_name}")),
        )),
        "viewer": Screen("viewer", (
            Image("Photo {photo_title}"),
            Text("{photo_title}"),
            Text("{photo_dims}"),
            Text("{saved_note}", when="saved_note"),
            Button("Edit", "edit"),
        )),
        "editor": Screen("editor", (
            Title("Crop"),
            Image("Editing {photo_title}"),
            *(Radio(name, checked=f"aspect_is_{index}", on_tap="choose_aspect", arg=name) for index, name in enumerate(ASPECTS)),
            Button("Rotate", "rotate", desc="Rotate 90 degrees clockwise"),
            Text("Result: {result_dims}"),
            Button("Save copy", "save_copy"),
            Button("Save", "save_over"),
            Button("Cancel", "cancel_edit"),
        )),
    }

    def initial_state(self) -> dict[str, object]:
        return {"photo": 0, "aspect": "Original", "saved_note": "", "turns": 0}

    def _photos(self, ctx: AppContext) -> list[dict[str, object]]:
        return ctx.phone.content_query(IMAGES, ["_id", "_data", "_display_name", "width", "height"],
                                       where="is_pending = 0 AND is_trashed = 0", user=PACKAGE)

    def derived(self, ctx: AppContext) -> dict[str, object]:
        photos = self._photos(ctx)
        current = next((photo for photo in photos if photo["_id"] == ctx.state.get("photo")), None)
        width, height = (int(current["width"] or 0), int(current["height"] or 0)) if current else (0, 0)
        _left, _top, result_w, result_h = crop_box(width, height, ASPECTS[str(ctx.state.get("aspect"))])
        turns = int(ctx.state.get("turns") or 0)
        if turns % 2:
            result_w, result_h = result_h, result_w
        return {
            "has_photos": bool(photos),
            "photos": [{"photo_id": str(photo["_id"]), "photo_name": photo["_display_name"],
                        "photo_size": f"{photo['width']} x {photo['height']}"} for photo in photos],
            "photo_title": current["_display_name"] if current else "",
            "photo_dims": f"{width} x {height}",
            "result_dims": f"{result_w} x {result_h}",
            **{f"aspect_is_{index}": ctx.state.get("aspect") == name for index, name in enumerate(ASPECTS)},
        }

    def tap_open_photo(self, ctx: AppContext, photo_id: str) -> None:
        ctx.state.update(photo=int(photo_id), saved_note="")
        ctx.navigate("viewer")

    def tap_edit(self, ctx: AppContext, arg: str) -> None:
        ctx.state.update(aspect="Original", turns=0)
        ctx.navigate("editor")

    def tap_rotate(self, ctx: AppContext, arg: str) -> None:
        ctx.state["turns"] = (int(ctx.state.get("turns") or 0) + 1) % 4

    def tap_choose_aspect(self, ctx: AppContext, name: str) -> None:
        ctx.state["aspect"] = name

    def tap_cancel_edit(self, ctx: AppContext, arg: str) -> None:
        ctx.runtime.stack.pop()

    def tap_save_copy(self, ctx: AppContext, arg: str) -> None:
        original = self._current(ctx)
        if original is None:
            return
        path = str(original["_data"])
        stem, _ext = posixpath.splitext(path)
        target, serial = f"{stem}-edited.png", 1
        while ctx.phone.fs.exists(target):
            serial += 1
            target = f"{stem}-edited-{serial}.png"
        new_id = self._write_crop(ctx, original, target)
        ctx.state.update(photo=new_id, saved_note="Saved as a copy")
        ctx.runtime.stack.pop()

    def tap_save_over(self, ctx: AppContext, arg: str) -> None:
        original = self._current(ctx)
        if original is None:
            return
        self._write_crop(ctx, original, str(original["_data"]))
        ctx.state["saved_note"] = "Saved"
        ctx.runtime.stack.pop()

    def _current(self, ctx: AppContext) -> dict[str, object] | None:
        return next((photo for photo in self._photos(ctx) if photo["_id"] == ctx.state.get("photo")), None)

    def _write_crop(self, ctx: AppContext, original: dict[str, object], target: str) -> int:
        width, height = int(original["width"] or 0), int(original["height"] or 0)
        _left, top, new_width, new_height = crop_box(width, height, ASPECTS[str(ctx.state.get("aspect"))])
        if int(ctx.state.get("turns") or 0) % 2:  # a quarter turn: the crop's sides swap
            data = photo_png(new_height, new_width)
            new_width, new_height = new_height, new_width
        else:
            data = photo_png(new_width, new_height, top=top, full_height=height)
        ctx.phone.fs.write(target, data, mode=0o660)
        provider = ctx.phone.providers["media"]
        with provider.connect(ctx.phone) as connection:
            media_id = scan_file(ctx.phone, connection, target, owner=PACKAGE)
        ctx.phone.notify_change("media")
        ctx.log("PhotoEditor", f"Saved {new_width}x{new_height} crop to {target}")
        return media_id
