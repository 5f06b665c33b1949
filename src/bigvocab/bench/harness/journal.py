"""The journal of a benchmark run: each finished row is written to ``DIR/journal.json`` as it
lands (atomically), so a run that is killed, or that outlasts the shell it started in, goes on
with ``bigvocab bench ... --resume`` from the row it was measuring and loses nothing else.

``bench --full`` lasts about six hours on two CPU cores; without the journal one interruption in
hour five costs all five. A resumed run measures only the rows the journal lacks (a speed row is
one layer at one V, a quality row one layer on one corpus), keeps the best matrix-multiply rate
and bandwidths measured in any of its pieces (they are limits), adds up the phase times, and
records when each piece started and on which machine, which the report shows. The journal is
removed once the run's files are written; a fresh run refuses to replace an unfinished one
unless told to (``--overwrite``).
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

from bigvocab.bench.harness.config import BenchConfig
from bigvocab.bench.harness.rows import QualityRow, SpeedRow, json_safe
from bigvocab.data.corpora import corpus_fingerprint, fingerprint_difference
from bigvocab.errors import ConfigError
from bigvocab.files import atomic_write_text, remove_stale_temporaries

JOURNAL_NAME = "journal.json"
VERSION = 2
#: Settings that say how a run is shown, not what it measures: they may differ between pieces.
PRESENTATION_KEYS = ("out", "progress")
#: Settings that name data by its path: a piece may find the same files in another place.
DATA_KEYS = {"brown": "brown-bengio:{}", "corpus": "{}"}


def _measured_settings(config: BenchConfig) -> dict:
    """The settings a resumed piece must share with the run; the data by what its files hold
    (:func:`~bigvocab.data.corpora.corpus_fingerprint`), not where they are."""
    settings = json_safe(config.to_dict())
    for key, form in DATA_KEYS.items():
        if settings.get(key) is not None:
            spec = form.format(settings[key])
            fingerprint = corpus_fingerprint(spec)
            settings[key] = {"spec": spec} if fingerprint is None else {"kind": spec.partition(":")[0], **fingerprint}
    return {key: value for key, value in settings.items() if key not in PRESENTATION_KEYS}


class BenchJournal:
    """The rows a run has finished, by (V, layer) and (corpus, layer), and what its pieces measured.

    ``path`` None keeps the journal in memory only (a run without an ``out`` directory).
    """

    def __init__(self, path: Path | None, state: dict) -> None:
        self.path = path
        self.state = state
        self._piece_started = self._last_record = time.perf_counter()

    @classmethod
    def start(
        cls, config: BenchConfig, machine: dict, *, resume: bool = False, overwrite: bool = False
    ) -> BenchJournal:
        """The journal of a new run, or with ``resume`` the one in ``config.out``, with a piece
        started now on ``machine`` added.

        Raises:
            ConfigError: ``resume`` without a journal in ``config.out``; a journal that cannot be
                read; settings that differ from the journal's; or a new run (without
                ``overwrite``) into a directory that holds an unfinished one.
        """
        path = None if config.out is None else Path(config.out) / JOURNAL_NAME
        settings = _measured_settings(config)
        if resume:
            if path is None:
                raise ConfigError("--resume needs the --out directory of the run to continue")
            state = cls._read(path)
            cls._check_settings(path, state["config"], settings)
        else:
            if path is not None and path.exists() and not overwrite:
                raise ConfigError(
                    f"{str(path.parent)!r} holds an unfinished benchmark run ({path.name}); continue it with "
                    "--resume and the same options, replace it with --overwrite, or choose another --out"
                )
            state = {
                "version": VERSION,
                "config": settings,
                "pieces": [],
                "speed": [],
                "memory": {},
                "matmul": None,
                "bandwidth": None,
                "quality": [],
                "word2vec": None,
                "phase_seconds": {},
            }
        if path is not None:
            remove_stale_temporaries(path.parent, iter([JOURNAL_NAME]))
        journal = cls(path, state)
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        # Rows are appended in the order they are measured, the order results.json lists them in,
        # so these counts say which rows each piece measured.
        rows_before = {"speed": len(state["speed"]), "quality": len(state["quality"])}
        state["pieces"].append({"started": started, "seconds": 0.0, "machine": machine, "rows_before": rows_before})
        journal._write()
        return journal

    @staticmethod
    def _read(path: Path) -> dict:
        if not path.exists():
            raise ConfigError(f"nothing to resume: {str(path)!r} does not exist (was the run started with this --out?)")
        try:
            state = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ConfigError(f"cannot read the benchmark journal {str(path)!r}: {error}") from None
        required = {"version", "config", "pieces", "speed", "memory", "quality", "phase_seconds"}
        if not isinstance(state, dict) or required - set(state) or state["version"] != VERSION:
            raise ConfigError(f"{str(path)!r} is not a version-{VERSION} benchmark journal")
        return state

    @staticmethod
    def _check_settings(path: Path, stored: dict, given: dict) -> None:
        changed = sorted(key for key in stored.keys() | given.keys() if stored.get(key) != given.get(key))
        if changed:
            shown = "; ".join(_difference(key, stored.get(key), given.get(key)) for key in changed)
            raise ConfigError(
                f"--resume continues the run in {str(path.parent)!r} with the options it started with; these "
                f"differ ({shown}). Give the same options (and --full if it was a --full run)."
            )

    def _write(self) -> None:
        self.pieces[-1]["seconds"] = time.perf_counter() - self._piece_started
        if self.path is not None:
            atomic_write_text(self.path, json.dumps(json_safe(self.state), indent=1) + "\n")

    @property
    def pieces(self) -> list[dict]:
        """``{"started", "seconds", "machine"}`` of every piece the run was measured in, the first
        first (``seconds``: its wall time up to its last finished row)."""
        return self.state["pieces"]

    def notes(self) -> list[str]:
        """What the report says of a run measured in more than one piece: when each piece started,
        how long it ran and from which row, and any difference of code or machine between them."""
        pieces = self.pieces
        if len(pieces) < 2:
            return []
        revisions = [piece["machine"].get("revision") or "unrecorded" for piece in pieces]
        shown = []
        for number, piece in enumerate(pieces, 1):
            before = piece.get("rows_before", {"speed": 0, "quality": 0})
            code = f", code {revisions[number - 1]}" if len(set(revisions)) > 1 else ""
            shown.append(
                f"piece {number} started {piece['started']} ({piece['seconds'] / 60:.0f} min{code}) "
                f"from speed row {before['speed'] + 1} and quality row {before['quality'] + 1}"
            )
        notes = [
            f"measured in {len(pieces)} pieces (continued with --resume), each row whole in one: " + "; ".join(shown)
        ]
        # The date always differs and the revision is said above: the rest describes the machine.
        machines = {
            json.dumps(
                {key: value for key, value in piece["machine"].items() if key not in ("date", "revision")},
                sort_keys=True,
            )
            for piece in pieces
        }
        if len(machines) > 1:
            notes.append(
                "the pieces ran on machines that describe themselves differently (see 'pieces' in results.json)"
            )
        return notes

    def speed_rows(self, vocab_size: int) -> dict[str, SpeedRow]:
        """The finished speed rows at ``vocab_size`` by layer label."""
        return {r["approach"]: SpeedRow.from_dict(r) for r in self.state["speed"] if r["vocab_size"] == vocab_size}

    def quality_rows(self, dataset: str) -> dict[str, QualityRow]:
        """The finished quality rows on corpus ``dataset`` by layer label."""
        return {r["approach"]: QualityRow.from_dict(r) for r in self.state["quality"] if r["dataset"] == dataset}

    # Each method that records a result charges the time since the previous record to a phase
    # and writes the journal: a piece killed mid-phase keeps the time of the rows it finished.

    def add_speed_row(self, row: SpeedRow) -> None:
        self._put("speed", row, ("vocab_size", "approach"))
        self._charge_and_write("speed")

    def add_quality_row(self, row: QualityRow) -> None:
        self._put("quality", row, ("dataset", "approach"))
        self._charge_and_write(f"quality {row.dataset}")

    def _put(self, kind: str, row, keys: tuple[str, str]) -> None:
        """Add ``row``, or replace the one with the same keys (a row seen again on resume)."""
        record = json_safe(row)
        rows = self.state[kind]
        same = [i for i, r in enumerate(rows) if all(r[k] == record[k] for k in keys)]
        if same:
            rows[same[0]] = record
        else:
            rows.append(record)

    def memory(self, vocab_size: int) -> dict | None:
        """The peak-memory results by label measured at ``vocab_size``, None if not yet measured."""
        return self.state["memory"].get(str(vocab_size))

    def set_memory(self, vocab_size: int, memory: dict) -> None:
        self.state["memory"][str(vocab_size)] = memory
        self._charge_and_write(f"memory V={vocab_size}")

    def limits(self) -> tuple[dict, dict] | None:
        """The matrix-multiply rate and the bandwidths per V (``str(V)`` -> rates) earlier pieces
        stored, or None before any."""
        matmul, bandwidth = self.state.get("matmul"), self.state.get("bandwidth")
        return None if matmul is None or bandwidth is None else (matmul, bandwidth)

    def best_limits(self, matmul: dict, bandwidth: dict) -> tuple[dict, dict]:
        """The higher matrix-multiply rate and, for each V, each higher bandwidth of these and the
        journal's; stored as the journal's (their measurement is charged to the speed phase)."""
        stored_matmul, stored_bandwidth = self.state.get("matmul"), self.state.get("bandwidth") or {}
        if stored_matmul is not None and stored_matmul["best_gflops"] > matmul["best_gflops"]:
            matmul = stored_matmul
        bandwidth = {**stored_bandwidth, **bandwidth}
        for vocab, rates in stored_bandwidth.items():
            bandwidth[vocab] = {key: max(value, rates.get(key, value)) for key, value in bandwidth[vocab].items()}
        self.state["matmul"], self.state["bandwidth"] = matmul, bandwidth
        self._charge_and_write("speed")
        return matmul, bandwidth

    @property
    def word2vec(self) -> dict | None:
        return self.state.get("word2vec")

    def set_word2vec(self, rows: dict) -> None:
        self.state["word2vec"] = rows
        self._charge_and_write("word2vec")

    @property
    def phase_seconds(self) -> dict[str, float]:
        """Seconds by phase over all pieces (up to each piece's last record)."""
        return dict(self.state["phase_seconds"])

    def _charge_and_write(self, phase: str) -> None:
        now = time.perf_counter()
        totals = self.state["phase_seconds"]
        totals[phase] = totals.get(phase, 0.0) + now - self._last_record
        self._last_record = now
        self._write()

    @property
    def wall_seconds(self) -> float:
        """The wall time of all pieces, this one up to now."""
        self.pieces[-1]["seconds"] = time.perf_counter() - self._piece_started
        return sum(piece["seconds"] for piece in self.pieces)

    def finish(self) -> None:
        """The run's files are written: the journal has served."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _difference(key: str, stored, given) -> str:
    """How setting ``key`` differs, in words; for data, what differs in its files."""
    if key in DATA_KEYS and isinstance(stored, dict) and isinstance(given, dict) and "files" in stored:
        if "files" in given and stored["kind"] == given["kind"]:
            return f"{key}: the files are not the run's ({fingerprint_difference(stored, given)})"
    return f"{key}: {stored!r} in the run, {given!r} now"
