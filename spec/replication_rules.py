"""The replication protocol's rules, by name: one enum per protocol decision.

What it is
    Kafka's replication protocol changed rule by rule, each change a KIP or a JIRA that
    closed a published counterexample. The partition spec (`spec.partition`) reads its
    variants only from these named rules (fields of `PartitionConfig`, `--set` keys in
    brackets), so a counterexample can be replayed against the rule it broke and the rule
    that fixed it (the story scenarios of `spec.replication_stories`). Every default is the
    rule Kafka runs today, except that followers find their divergence point through
    OffsetsForLeaderEpoch (Kafka 2.7+ reads it from the Fetch answer: `diverging-epoch`,
    which the checker finds no violation for under the same bounds either). Values only
    here, no protocol logic.

Truncation: where a new follower's log stops agreeing with its leader's (`truncation`)
    `hw`       before Kafka 0.11: truncate to the follower's own high watermark. The
               follower's HW lags the leader's by a fetch round, so a committed record can be
               cut (KIP-101 scenario 1: loss) or a different record kept at the same offset
               (KIP-101 scenario 2: divergence).
    `kip-101`  Kafka 0.11 (KIP-101): ask the leader with OffsetsForLeaderEpoch for the end
               of the follower's latest epoch and truncate there, in one round; the answer
               carries only an offset. When the leader never had that epoch (consecutive
               fast leader changes) the answer is the start of the leader's next epoch, and
               the follower keeps records the leader does not have (KIP-279, KAFKA-6361).
    `kip-279`  Kafka 2.0 (KIP-279): the answer also names the epoch it is for; a follower
               that does not hold that epoch cuts back to where its own copy of the older
               epoch ends and asks again (several rounds). The request is not yet fenced: a
               broker that still presumes leadership on an older epoch answers from a log
               that may change (hachikuji/kafka-specification Kip320.tla, rule 2).
    `kip-320`  Kafka 2.1 (KIP-320): the request carries the follower's current leader
               epoch and only a leader in that same epoch answers (FENCED_LEADER_EPOCH or
               UNKNOWN_LEADER_EPOCH otherwise). `epoch` is accepted as its old name.

Fetch fencing: whom a leader serves (`fetch.fencing`)
    `none`     before KIP-320: a broker that presumes leadership answers any replica that
               fetches from it, whatever epoch either is on, and counts that replica's fetch
               offset towards its high watermark and ISR.
    `kip-320-first-try`  the first KIP-320 design (hachikuji/kafka-specification
               Kip320FirstTry.tla): a new follower fetches at once, and the leader serves it
               whatever epoch either is on as long as the epoch of the follower's last record
               matches the leader's record at that offset, and otherwise answers that it must
               truncate first. A broker that presumes leadership then counts followers on
               other epochs towards its HW and ISR, which breaks the strong-ISR property.
    `kip-320`  what shipped: the Fetch request carries the follower's current leader epoch; a
               leader on another epoch refuses it, and a follower drops a response from
               another epoch.

ISR join: when a follower outside the ISR may rejoin it (`isr.join`)
    `hw`          it fetched up to the leader's high watermark. A new leader's HW lags the
                  old leader's, so a follower can join without a record the old leader had
                  committed, then be elected and lose it (KAFKA-7128).
    `kafka-7128`  Kafka 2.1 (KAFKA-7128, `Partition.maybeExpandIsr`): it also fetched up to the
                  start offset of the leader's current epoch, so it holds every record the
                  leader had when it was elected.

Follower high watermark: what a follower does with the HW in its truncation answer
(`follower.high.watermark`)
    `offsets-for-leader-epoch`  the divergence point comes from OffsetsForLeaderEpoch,
                                whose answer carries no HW; the follower learns the HW on
                                its next fetch (the design of KIP-101 to KIP-320).
    `diverging-epoch-hw-first`  Kafka 2.7 (KAFKA-10554) until KAFKA-14704: the Fetch response names
                                the diverging epoch and carries the leader's HW, and
                                `AbstractFetcherThread` applies the HW before it truncates:
                                in between, the follower's HW covers records the leader
                                does not have, which a consumer fetching from the follower
                                (KIP-392) or a client without KIP-320 can read (KAFKA-14704).
    `diverging-epoch`           KAFKA-14704's fix (Kafka 3.5, backported to older branches):
                                truncate first, then apply the HW.

Leader high watermark: when the leader's HW may advance
    The partition spec has one rule: HW := max(HW, min LEO over the ISR), where a follower
    counts only once it fetched in the leader's epoch (KIP-320's rule 3 in Kip320.tla; with
    `fetch.fencing` other than `kip-320` a follower on an older epoch counts too). The KRaft
    controller's model adds two named rules: the HW waits for the maximal ISR (KIP-497,
    `leader.isr`) and advances only while the ISR reaches min ISR (KIP-966, KAFKA-15583,
    `high.watermark`).

Election: whom the controller may elect (`unclean.leader.election.enable`)
    `clean`    only an ISR member; the partition goes offline when none is alive.
    `unclean`  any live replica when no ISR member is: committed records can be lost. (The
               KRaft controller adds KIP-966's eligible leader replicas, `spec.controller`.)

ISR change path: how a leader's ISR change reaches the controller
    `zookeeper`        the leader writes the partition state znode with a conditional
                       (zkVersion) update, and the controller learns it later through an
                       IsrChangeNotification (`spec.replication_with_zk_controller`; the
                       partition spec folds the write and the notification into one step).
    `alter-partition`  KIP-497: the leader sends AlterPartition and waits for the
                       controller's answer, using the maximal ISR meanwhile
                       (`spec.replication_with_controller`, `controller=kraft`).

Where it comes from
    KIP-101 ("Alter Replication Protocol to use Leader Epoch rather than High Watermark for
    Truncation"), KIP-279 ("Fix log divergence between leader and follower after fast leader
    fail over"), KIP-320 ("Allow fetchers to detect and handle log truncation"), KIP-392,
    KIP-497, KIP-966; KAFKA-6361, KAFKA-7128 (apache/kafka#5557), KAFKA-10554, KAFKA-14704
    (apache/kafka#13230); hachikuji/kafka-specification (KafkaReplication.tla, Kip101.tla,
    Kip279.tla, Kip320.tla, Kip320FirstTry.tla).
"""

from __future__ import annotations

import enum
from typing import TypeVar

RuleType = TypeVar("RuleType", bound=enum.Enum)


def parse_rule(rule: type[RuleType], text: str, aliases: dict[str, str] | None = None) -> RuleType:
    """The member of `rule` spelled `text` (its value, case-insensitive, or an alias)."""
    wanted = text.strip().lower()
    wanted = (aliases or {}).get(wanted, wanted)
    for member in rule:
        if str(member.value) == wanted:
            return member
    known = ", ".join(str(member.value) for member in rule)
    raise ValueError(f"expected one of {known}, not {text!r}")


class TruncationRule(enum.Enum):
    """Where a replica that becomes a follower truncates its log (see the module docstring)."""

    HIGH_WATERMARK = "hw"  # before Kafka 0.11
    KIP_101 = "kip-101"  # one OffsetsForLeaderEpoch round, offset only
    KIP_279 = "kip-279"  # several rounds, the answer names its epoch; not fenced
    KIP_320 = "kip-320"  # KIP-279 fenced by the follower's current leader epoch
    LEADER_EPOCH = "kip-320"  # noqa: PIE796  (an alias of KIP_320: today's rule by its older name)

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's

    @classmethod
    def parse(cls, text: str) -> TruncationRule:
        """Parse `hw`, `kip-101`, `kip-279`, `kip-320` (or its old name `epoch`)."""
        try:
            return parse_rule(cls, text, {"epoch": "kip-320"})
        except ValueError:
            raise ValueError(f"truncation must be hw, kip-101, kip-279 or kip-320, not {text!r}") from None

    @property
    def asks_the_leader(self) -> bool:
        """The follower asks the leader (OffsetsForLeaderEpoch) rather than trusting its own HW."""
        return self is not TruncationRule.HIGH_WATERMARK

    @property
    def fenced(self) -> bool:
        """Only a leader on the follower's current epoch answers (KIP-320)."""
        return self is TruncationRule.KIP_320


class FetchFencing(enum.Enum):
    """Whom a leader answers when a replica fetches from it."""

    NONE = "none"  # before KIP-320: anyone who fetches from a broker presuming leadership
    LAST_FETCHED_EPOCH = "kip-320-first-try"  # anyone whose last record's epoch matches the leader's
    CURRENT_LEADER_EPOCH = "kip-320"  # only a follower on the leader's own epoch

    __hash__ = object.__hash__

    @classmethod
    def parse(cls, text: str) -> FetchFencing:
        """Parse `none`, `kip-320-first-try` or `kip-320`."""
        return parse_rule(cls, text)


class IsrJoinRule(enum.Enum):
    """When a follower outside the ISR may rejoin it."""

    HIGH_WATERMARK = "hw"  # fetched up to the leader's HW (before KAFKA-7128)
    EPOCH_START = "kafka-7128"  # and up to the start of the leader's current epoch

    __hash__ = object.__hash__

    @classmethod
    def parse(cls, text: str) -> IsrJoinRule:
        """Parse `hw` or `kafka-7128`."""
        return parse_rule(cls, text)


class FollowerHighWatermarkRule(enum.Enum):
    """What a follower does with the leader's HW that comes with its truncation answer."""

    OFFSETS_FOR_LEADER_EPOCH = "offsets-for-leader-epoch"  # the answer carries no HW
    DIVERGING_EPOCH_HW_FIRST = "diverging-epoch-hw-first"  # KAFKA-10554 until KAFKA-14704's fix
    DIVERGING_EPOCH = "diverging-epoch"  # KAFKA-14704's fix: truncate, then take the HW

    __hash__ = object.__hash__

    @classmethod
    def parse(cls, text: str) -> FollowerHighWatermarkRule:
        """Parse one of the three values."""
        return parse_rule(cls, text)


class ElectionRule(enum.Enum):
    """Whom the controller may elect when no live ISR member is left."""

    CLEAN = "clean"  # nobody: the partition goes offline
    UNCLEAN = "unclean"  # any live replica (unclean.leader.election.enable=true)

    __hash__ = object.__hash__

    @classmethod
    def of(cls, unclean_leader_election_enable: bool) -> ElectionRule:
        """The rule Kafka's `unclean.leader.election.enable` selects."""
        return cls.UNCLEAN if unclean_leader_election_enable else cls.CLEAN


class IsrChangePath(enum.Enum):
    """How a leader's ISR change reaches the controller (the generation of the controller)."""

    ZOOKEEPER = "zookeeper"  # conditional znode write, IsrChangeNotification later
    ALTER_PARTITION = "alter-partition"  # KIP-497: AlterPartition to the controller

    __hash__ = object.__hash__


__all__ = [
    "ElectionRule",
    "FetchFencing",
    "FollowerHighWatermarkRule",
    "IsrChangePath",
    "IsrJoinRule",
    "TruncationRule",
    "parse_rule",
]
