"""Deliberately broken logs under test, loaded by the conformance tests as MODULE:FACTORY targets."""

from __future__ import annotations

from conformance.sut import ImplLog, ReferenceLog


class EndOffsetOffByOne(ImplLog):
    """Answers OffsetsForLeaderEpoch one offset too far whenever an end offset is known."""

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        epoch, end = super().end_offset_for_epoch(requested_epoch)
        return (epoch, end + 1) if end >= 0 else (epoch, end)


class TruncateKeepsOneTooMany(ReferenceLog):
    """`truncate_to` keeps the record at the truncation offset."""

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset + 1)


class CrashKeepsEverything(ReferenceLog):
    """A crash that loses nothing: unflushed records survive."""

    def crash(self) -> None:
        high_watermark = self.log.high_watermark
        self.log.flush()
        self.log.crash()
        self.log.update_high_watermark(high_watermark)


def make_reference() -> ReferenceLog:
    """A working target, to check that MODULE:FACTORY loading works."""
    return ReferenceLog()


NOT_CALLABLE = 42
