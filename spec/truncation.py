"""Follower truncation: where a follower's log stops agreeing with its leader's.

What it is
    When a replica becomes a follower (a new leader epoch, or a restart) its log may hold
    records the new leader does not have: appended by an old leader but never committed.
    Before fetching, the follower truncates them. The rule it uses decides whether Kafka
    loses committed data.

The two rules (selected by the `truncation` setting)
    `hw` (before Kafka 0.11): truncate to the follower's own high watermark. The follower's
    HW lags the leader's by one fetch round (it learns the leader's HW only in the next fetch
    response, `ReplicaFetcherThread.processPartitionData`), so this can remove committed
    records (KIP-101 scenario 1) or keep records the new leader does not have at the same
    offset (KIP-101 scenario 2).

    `epoch` (KIP-101, corrected by KIP-279): the follower sends its latest leader epoch in an
    OffsetsForLeaderEpoch request; the leader answers the largest epoch it knows that is not
    newer and where that epoch ends in its log. If the leader does not know the follower's
    epoch, the follower truncates to where *its* copy of the leader's epoch ends and asks
    again (KIP-279's multi-round exchange after several quick leader changes). The request
    carries the follower's current leader epoch and a leader on another epoch refuses it
    (KIP-320 fencing), which the partition spec expresses as the action's guard.

Where it comes from
    `AbstractFetcherThread.getOffsetTruncationState` and `ReplicaFetcherThread`
    (`truncateToHighWatermark`); KIP-101, KIP-279, KIP-320; hachikuji/kafka-specification
    Kip101.tla, Kip279.tla, Kip320.tla.
"""

from __future__ import annotations

from spec.log import (
    EpochCache,
    end_offset_for_epoch,
    epoch_cache_is_monotonic,  # noqa: F401  (used by the PEP 316 contracts CrossHair checks)
    latest_epoch,
    truncate_cache_from_end,
)
from spec.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET


def offsets_for_leader_epoch(
    leader_cache: EpochCache, leader_log_end_offset: int, requested_epoch: int
) -> tuple[int, int]:
    """The leader's answer to OffsetsForLeaderEpoch: (largest known epoch <= requested, its end)."""
    return end_offset_for_epoch(leader_cache, requested_epoch, leader_log_end_offset)


def truncation_round(
    follower_cache: EpochCache,
    follower_log_end_offset: int,
    follower_high_watermark: int,
    leader_epoch: int,
    leader_end_offset: int,
) -> tuple[int, bool]:
    """One round of `getOffsetTruncationState`: (offset to truncate to, truncation complete?).

    `leader_epoch`/`leader_end_offset` is the leader's answer for the follower's latest epoch.
    """
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        # The leader knows no epoch (old message format): fall back to the high watermark.
        return min(follower_high_watermark, follower_log_end_offset), True
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, follower_log_end_offset), True
    follower_epoch, follower_end = end_offset_for_epoch(follower_cache, leader_epoch, follower_log_end_offset)
    if follower_end == UNDEFINED_EPOCH_OFFSET:
        # The follower has nothing as old as the leader's epoch: keep what the leader has.
        return min(leader_end_offset, follower_log_end_offset), True
    if follower_epoch != leader_epoch:
        # The follower never saw the leader's epoch: cut back to where its own copy of the
        # older epoch ends and ask again with the epoch before it (KIP-279).
        return min(follower_end, follower_log_end_offset), False
    return min(leader_end_offset, follower_end, follower_log_end_offset), True


def epoch_truncation_offset(
    follower_cache: EpochCache,
    follower_log_end_offset: int,
    follower_high_watermark: int,
    leader_cache: EpochCache,
    leader_log_end_offset: int,
) -> int:
    """Where the follower truncates under the leader-epoch rule (KIP-101 + KIP-279).

    Runs the OffsetsForLeaderEpoch exchange to completion. Each incomplete round trims at
    least one epoch from the follower's cache, so it ends after at most len(cache)+1 rounds.
    An empty follower log has nothing to truncate. The result never passes the follower's
    log end (checked by CrossHair on well-formed caches):

    pre: 0 <= follower_high_watermark <= follower_log_end_offset and leader_log_end_offset >= 0
    pre: all(entry.epoch >= 0 for entry in follower_cache + leader_cache)
    pre: all(0 <= entry.start_offset <= follower_log_end_offset for entry in follower_cache)
    pre: all(0 <= entry.start_offset <= leader_log_end_offset for entry in leader_cache)
    pre: epoch_cache_is_monotonic(follower_cache) and epoch_cache_is_monotonic(leader_cache)
    post: 0 <= __return__ <= follower_log_end_offset
    """
    cache = follower_cache
    end = follower_log_end_offset
    for _ in range(len(follower_cache) + 1):
        requested = latest_epoch(cache)
        if requested == UNDEFINED_EPOCH:
            return min(follower_high_watermark, end)
        answer_epoch, answer_end = offsets_for_leader_epoch(leader_cache, leader_log_end_offset, requested)
        offset, complete = truncation_round(cache, end, follower_high_watermark, answer_epoch, answer_end)
        if complete:
            return offset
        end = offset
        cache = truncate_cache_from_end(cache, offset)
    return end


def high_watermark_truncation_offset(follower_log_end_offset: int, follower_high_watermark: int) -> int:
    """Where the follower truncates under the pre-0.11 rule: its own high watermark.

    pre: 0 <= follower_high_watermark
    post: __return__ <= follower_log_end_offset and __return__ <= follower_high_watermark
    """
    return min(follower_high_watermark, follower_log_end_offset)
