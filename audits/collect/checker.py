"""Output checking, as a Kattis judge does it.

Two kinds of checker, both behind :class:`OutputChecker`:

* the **default validator** (:func:`compare_tokens`): the output and the judge's
  answer are split into whitespace-separated tokens and compared token by token,
  with the problem's ``validator_flags`` (parsed by :func:`parse_validator_flags`):

  - ``case_sensitive``: tokens must match in case (default: ASCII case is ignored);
  - ``space_change_sensitive``: whitespace must match exactly, byte for byte
    (default: any run of whitespace separates tokens, leading/trailing is ignored);
  - ``float_absolute_tolerance E``, ``float_relative_tolerance E``,
    ``float_tolerance E`` (sets both): where the answer token is a number, the
    output token must be a number ``o`` with ``|o - a| <= E_abs`` **or**
    ``|o - a| <= E_rel * |a|`` (Kattis semantics: either tolerance suffices).
    Without a tolerance numbers are compared as text.

* a **custom output validator** program, run through the Kattis protocol::

      validator input_file answer_file feedback_dir [validator_flags...] < output

  exit code 42 = accepted, 43 = wrong answer; any other exit code is a judge
  error and raises :class:`CheckerError` (it is not the submission's fault).

Example
-------
>>> compare_tokens(b"1 2 3\\n", b"1  2\\n3")
(True, 'accepted')
>>> compare_tokens(b"1 2 4", b"1 2 3")
(False, "token 3: expected '3', got '4'")
>>> compare_tokens(b"0.3333", b"0.333333", float_absolute_tolerance=1e-3)
(True, 'accepted')
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from audits.collect.languages import Program

__all__ = ["OutputChecker", "CheckerError", "parse_validator_flags"]

ACCEPTED_EXIT = 42
WRONG_ANSWER_EXIT = 43
#: Seconds a custom validator may run on one output before it is a judge error.
VALIDATOR_TIMEOUT_S = 60.0

KNOWN_FLAGS = ("case_sensitive", "space_change_sensitive", "float_absolute_tolerance",
               "float_relative_tolerance", "float_tolerance")

# What C's strtod accepts as a whole decimal token (Python's float() also accepts
# "1_000" and surrounding spaces, which a judge would not).
_FLOAT_RE = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)
_SPLIT_KEEP_WS = re.compile(rb"([ \t\n\r\x0b\x0c]+)")


def _count_tokens(path: Path, *, stop_after: int, chunk: int = 1 << 16) -> int:
    """Whitespace-separated tokens in a file, read 64 KiB at a time; stops once past ``stop_after``.

    Whitespace is the default validator's (space, tab, newline, CR, VT, FF: ``bytes.split()``).
    """
    count = 0
    previous_ends_in_token = False
    with open(path, "rb") as fh:
        while count <= stop_after:
            block = fh.read(chunk)
            if not block:
                break
            count += len(block.split())
            if previous_ends_in_token and not block[:1].isspace():
                count -= 1  # one token split across the two blocks
            previous_ends_in_token = not block[-1:].isspace()
    return count


class CheckerError(Exception):
    """The checker itself failed (validator crashed, timed out or could not start): a judge error."""


def parse_validator_flags(flags: str | list[str] | tuple[str, ...] | None) -> dict:
    """Parse Kattis default-validator flags.

    Parameters
    ----------
    flags : str or list of str
        E.g. ``"float_tolerance 1e-6 case_sensitive"`` or the same as a list.
        Flags apply left to right, so a later tolerance overrides an earlier one.

    Returns
    -------
    dict
        ``case_sensitive`` (bool), ``space_change_sensitive`` (bool),
        ``float_absolute_tolerance`` (float or None), ``float_relative_tolerance``
        (float or None): exactly the keyword arguments of :func:`compare_tokens`.

    Raises
    ------
    ValueError
        An unknown flag, or a tolerance without a non-negative number after it.

    >>> parse_validator_flags("float_tolerance 1e-6")["float_relative_tolerance"]
    1e-06
    """
    if flags is None:
        words: list[str] = []
    elif isinstance(flags, str):
        words = flags.split()
    else:
        words = [str(w) for w in flags]
        words = [part for w in words for part in w.split()]
    out = {"case_sensitive": False, "space_change_sensitive": False,
           "float_absolute_tolerance": None, "float_relative_tolerance": None}
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("case_sensitive", "space_change_sensitive"):
            out[word] = True
            i += 1
            continue
        if word in ("float_absolute_tolerance", "float_relative_tolerance", "float_tolerance"):
            if i + 1 >= len(words):
                raise ValueError(f"validator flag {word!r} needs a number after it (e.g. '{word} 1e-6')")
            try:
                value = float(words[i + 1])
            except ValueError:
                raise ValueError(f"validator flag {word!r} needs a number after it, got {words[i + 1]!r}") from None
            if not value >= 0 or math.isinf(value):
                raise ValueError(f"validator flag {word!r} needs a finite non-negative number, got {words[i + 1]!r}")
            keys = (["float_absolute_tolerance", "float_relative_tolerance"] if word == "float_tolerance"
                    else [word])
            for key in keys:
                out[key] = value
            i += 2
            continue
        raise ValueError(f"unknown validator flag {word!r}; the default validator knows: {', '.join(KNOWN_FLAGS)}")
    return out


def _show(token: bytes, limit: int = 30) -> str:
    text = token.decode("utf-8", errors="replace")
    if len(text) > limit:
        text = text[:limit] + "..."
    return repr(text)


def _is_number(token: bytes) -> bool:
    return _FLOAT_RE.fullmatch(token) is not None


def _token_matches(out: bytes, ans: bytes, *, case_sensitive: bool, abs_tol, rel_tol) -> str | None:
    """None when the tokens match, else the reason (without the token index)."""
    if out == ans or (not case_sensitive and out.lower() == ans.lower()):
        return None
    if (abs_tol is not None or rel_tol is not None) and _is_number(ans):
        if not _is_number(out):
            return f"expected a number near {_show(ans)}, got {_show(out)}"
        a, o = float(ans), float(out)
        diff = abs(a - o)
        if (abs_tol is not None and diff <= abs_tol) or (rel_tol is not None and diff <= rel_tol * abs(a)):
            return None
        return f"expected {_show(ans)}, got {_show(out)} (difference {diff:.3g} beyond tolerance)"
    return f"expected {_show(ans)}, got {_show(out)}"


def _first_mismatch(out_tokens: list[bytes], ans_tokens: list[bytes], *, case_sensitive: bool, abs_tol,
                    rel_tol) -> int | None:
    """Index of the first token pair that does not match (over the common length), or None.

    Vectorised for long numeric outputs: only tokens that differ as text are
    parsed, and their tolerance test runs in numpy (same rule as _token_matches).
    """
    differ = [i for i, (o, a) in enumerate(zip(out_tokens, ans_tokens)) if o != a]
    if differ and not case_sensitive:
        differ = [i for i in differ if out_tokens[i].lower() != ans_tokens[i].lower()]
    if not differ:
        return None
    if abs_tol is None and rel_tol is None:
        return differ[0]
    fullmatch = _FLOAT_RE.fullmatch
    not_numeric = next((i for i in differ if not (fullmatch(ans_tokens[i]) and fullmatch(out_tokens[i]))), None)
    numeric = [i for i in differ if not_numeric is None or i < not_numeric]
    if numeric:
        a = np.array([float(ans_tokens[i]) for i in numeric])
        o = np.array([float(out_tokens[i]) for i in numeric])
        with np.errstate(invalid="ignore"):
            diff = np.abs(o - a)
            ok = np.zeros(len(numeric), dtype=bool)
            if abs_tol is not None:
                ok |= diff <= abs_tol
            if rel_tol is not None:
                ok |= diff <= rel_tol * np.abs(a)
        failed = np.flatnonzero(~ok)
        if failed.size:
            return numeric[int(failed[0])]
    return not_numeric


def compare_tokens(output: bytes, answer: bytes, *, case_sensitive: bool = False,
                   space_change_sensitive: bool = False, float_absolute_tolerance: float | None = None,
                   float_relative_tolerance: float | None = None) -> tuple[bool, str]:
    """Compare a program's output with the judge's answer like the Kattis default validator.

    Tokens are maximal runs of non-whitespace bytes (whitespace = space, tab,
    newline, CR, VT, FF). Token ``i`` of the output matches token ``i`` of the
    answer when they are equal (ignoring ASCII case unless ``case_sensitive``),
    or, when a tolerance is set and the answer token is a decimal number
    ``a``, when the output token is a number ``o`` with
    ``|o - a| <= float_absolute_tolerance`` or ``|o - a| <= float_relative_tolerance * |a|``.
    Both must have the same number of tokens. With ``space_change_sensitive``
    the whitespace between, before and after tokens must also be identical.

    Parameters
    ----------
    output, answer : bytes
    case_sensitive, space_change_sensitive : bool
    float_absolute_tolerance, float_relative_tolerance : float or None

    Returns
    -------
    (accepted, reason) : (bool, str)
        ``reason`` is ``"accepted"`` or a short description of the first
        difference, e.g. ``"token 3: expected '5', got '6'"`` (tokens count from 1).

    Examples
    --------
    >>> compare_tokens(b"YES", b"yes")
    (True, 'accepted')
    >>> compare_tokens(b"YES", b"yes", case_sensitive=True)
    (False, "token 1: expected 'yes', got 'YES'")
    >>> compare_tokens(b"100.5", b"100", float_relative_tolerance=0.01)
    (True, 'accepted')
    """
    if not isinstance(output, (bytes, bytearray)) or not isinstance(answer, (bytes, bytearray)):
        raise TypeError("compare_tokens compares bytes; read files in binary mode")
    for name, tol in (("float_absolute_tolerance", float_absolute_tolerance),
                      ("float_relative_tolerance", float_relative_tolerance)):
        if tol is not None and not tol >= 0:
            raise ValueError(f"{name} must be a non-negative number, got {tol!r}")
    if output == answer:
        return True, "accepted"
    abs_tol, rel_tol = float_absolute_tolerance, float_relative_tolerance
    if space_change_sensitive:
        out_parts, ans_parts = _SPLIT_KEEP_WS.split(output), _SPLIT_KEEP_WS.split(answer)
        # split() with a capture group alternates token, whitespace, token, ...; both start with a
        # (possibly empty) token, so equal positions hold the same kind of segment.
        token_no = 0
        for k, (o, a) in enumerate(zip(out_parts, ans_parts)):
            if k % 2 == 1:
                if o != a:
                    return False, f"whitespace after token {token_no} differs: expected {_show(a)}, got {_show(o)}"
                continue
            if o == a == b"":
                continue
            token_no += 1
            if o == b"" or a == b"":
                def what(seg, parts, k=k):  # bound now (ruff B023)
                    return _show(seg) if seg else ("whitespace" if k + 1 < len(parts) else "end of output")
                return False, f"token {token_no}: expected {what(a, ans_parts)}, got {what(o, out_parts)}"
            why = _token_matches(o, a, case_sensitive=case_sensitive, abs_tol=abs_tol, rel_tol=rel_tol)
            if why is not None:
                return False, f"token {token_no}: {why}"
        if len(out_parts) != len(ans_parts):
            longer = "output" if len(out_parts) > len(ans_parts) else "answer"
            return False, f"{'extra output' if longer == 'output' else 'output ends early'} after token {token_no}"
        return True, "accepted"

    out_tokens, ans_tokens = output.split(), answer.split()
    if not case_sensitive and abs_tol is None and rel_tol is None:
        if len(out_tokens) == len(ans_tokens) and output.lower().split() == answer.lower().split():
            return True, "accepted"
    elif out_tokens == ans_tokens:
        return True, "accepted"
    first_bad = _first_mismatch(out_tokens, ans_tokens, case_sensitive=case_sensitive, abs_tol=abs_tol,
                                rel_tol=rel_tol)
    if first_bad is not None:
        why = _token_matches(out_tokens[first_bad], ans_tokens[first_bad], case_sensitive=case_sensitive,
                             abs_tol=abs_tol, rel_tol=rel_tol)
        return False, f"token {first_bad + 1}: {why}"
    if len(out_tokens) > len(ans_tokens):
        return False, (f"extra output: {len(out_tokens)} tokens, expected {len(ans_tokens)} "
                       f"(token {len(ans_tokens) + 1} is {_show(out_tokens[len(ans_tokens)])})")
    if len(out_tokens) < len(ans_tokens):
        return False, (f"output ends early: {len(out_tokens)} tokens, expected {len(ans_tokens)} "
                       f"(next expected {_show(ans_tokens[len(out_tokens)])})")
    return True, "accepted"


@dataclass(frozen=True)
class OutputChecker:
    """Decides whether one output is correct for one test.

    Attributes
    ----------
    kind : {"default", "custom"}
        The Kattis default validator, or a custom output validator program.
    flags : tuple of str
        ``validator_flags``: options of the default validator, or extra
        arguments appended to a custom validator's command line.
    program : Program or None
        The prepared custom validator (None for the default validator).
    source : Path or None
        Where the custom validator came from (for messages).
    timeout_s : float
        Wall-clock limit for one custom-validator run.

    Examples
    --------
    >>> OutputChecker.default("float_tolerance 1e-6").describe()
    'default validator (float_tolerance 1e-6)'
    """

    kind: str = "default"
    flags: tuple[str, ...] = ()
    program: Program | None = None
    source: Path | None = None
    timeout_s: float = VALIDATOR_TIMEOUT_S
    _options: dict = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        if self.kind not in ("default", "custom"):
            raise ValueError(f"OutputChecker kind must be 'default' or 'custom', got {self.kind!r}")
        object.__setattr__(self, "flags", tuple(str(f) for f in self.flags))
        if self.kind == "default":
            if self.program is not None:
                raise ValueError("the default validator takes no program")
            object.__setattr__(self, "_options", parse_validator_flags(list(self.flags)))
        elif self.program is None:
            raise ValueError("a custom OutputChecker needs the prepared validator program")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s!r}")

    @classmethod
    def default(cls, flags: str | list[str] | tuple[str, ...] = ()) -> "OutputChecker":
        """The Kattis default validator with ``flags`` (validated now, not at check time)."""
        return cls("default", tuple(flags.split()) if isinstance(flags, str) else tuple(flags))

    @classmethod
    def custom(cls, program: Program, *, flags: str | list[str] | tuple[str, ...] = (), source: Path | None = None,
               timeout_s: float = VALIDATOR_TIMEOUT_S) -> "OutputChecker":
        """A custom output validator run through the Kattis protocol."""
        return cls("custom", tuple(flags.split()) if isinstance(flags, str) else tuple(flags), program,
                   source, timeout_s)

    def with_flags(self, flags) -> "OutputChecker":
        """The same checker with other flags (a test group's ``output_validator_flags``)."""
        flags = tuple(flags.split()) if isinstance(flags, str) else tuple(flags)
        return OutputChecker(self.kind, flags, self.program, self.source, self.timeout_s)

    @property
    def options(self) -> dict:
        """Parsed default-validator options (empty for a custom validator)."""
        return dict(self._options or {})

    def describe(self) -> str:
        what = "default validator" if self.kind == "default" else f"custom validator {self.source or self.program.argv}"
        return f"{what} ({' '.join(self.flags)})" if self.flags else what

    def to_dict(self) -> dict:
        return {"kind": self.kind, "flags": list(self.flags),
                "program": None if self.program is None else self.program.to_dict(),
                "source": None if self.source is None else str(self.source), "timeout_s": self.timeout_s}

    def check(self, output_path: Path, *, input_path: Path, answer_path: Path, workdir: Path) -> tuple[bool, str]:
        """Judge one output file.

        Parameters
        ----------
        output_path : Path
            The program's stdout, saved to a file.
        input_path, answer_path : Path
            The test's ``.in`` and ``.ans``.
        workdir : Path
            A folder the checker may write into (a custom validator runs there,
            with its feedback directory ``workdir/feedback``).

        Returns
        -------
        (accepted, reason) : (bool, str)

        Raises
        ------
        CheckerError
            A custom validator crashed, timed out, or exited with neither 42 nor 43.
        """
        if self.kind == "default":
            answer = Path(answer_path).read_bytes()
            # Bounded memory against a "checker bomb" (an output of millions of tiny tokens,
            # ~50 bytes of Python objects each): count the output's tokens in a streaming pass
            # first; more than the answer has is a wrong answer under every flag, so only an
            # output no longer (in tokens) than the trusted answer is split in memory.
            expected = len(answer.split())
            found = _count_tokens(Path(output_path), stop_after=expected)
            if found > expected:
                return False, f"extra output: more than {expected} tokens, expected {expected}"
            output = Path(output_path).read_bytes()
            return compare_tokens(output, answer, **self._options)
        return self._run_custom(Path(output_path), Path(input_path), Path(answer_path), Path(workdir))

    def _run_custom(self, output_path: Path, input_path: Path, answer_path: Path, workdir: Path) -> tuple[bool, str]:
        workdir.mkdir(parents=True, exist_ok=True)
        feedback = workdir / "feedback"
        if feedback.exists():
            shutil.rmtree(feedback)
        feedback.mkdir()
        argv = [*self.program.argv, str(Path(input_path).resolve()), str(Path(answer_path).resolve()),
                str(feedback.resolve()) + os.sep, *self.flags]
        name = self.source or self.program.argv[-1]
        try:
            with open(output_path, "rb") as stdin:
                proc = subprocess.run(argv, stdin=stdin, capture_output=True, cwd=workdir, timeout=self.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise CheckerError(f"output validator {name} ran longer than {self.timeout_s:g} s "
                               f"on {input_path}") from exc
        except OSError as exc:
            raise CheckerError(f"output validator {name} could not start: {exc}") from exc
        message = _feedback_message(feedback)
        if proc.returncode == ACCEPTED_EXIT:
            return True, "accepted" + (f": {message}" if message else "")
        if proc.returncode == WRONG_ANSWER_EXIT:
            return False, f"validator: {message}" if message else "validator: wrong answer"
        err = proc.stderr.decode(errors="replace").strip()[-500:]
        raise CheckerError(f"output validator {name} exited with {proc.returncode} on {input_path} "
                           f"(expected {ACCEPTED_EXIT} = accepted or {WRONG_ANSWER_EXIT} = wrong answer)"
                           + (f": {err}" if err else ""))


def _feedback_message(feedback: Path, limit: int = 200) -> str:
    """First non-empty line of judgemessage.txt (or teammessage.txt), shortened."""
    for name in ("judgemessage.txt", "teammessage.txt"):
        path = feedback / name
        if path.is_file():
            with open(path, "rb") as fh:
                text = fh.read(4096).decode("utf-8", errors="replace")
            for line in text.splitlines():
                if line.strip():
                    line = line.strip()
                    return line if len(line) <= limit else line[:limit] + "..."
    return ""
