"""The SWF reader on input a naive reader reads silently wrong (core/workloads/swf.py, ``read_swf``).

Each case is first reproduced on a tiny file, then checked to be refused with a
:class:`TraceFormatError` naming the file and line (or read correctly):

* CR-only (old Mac) and CRLF line ends read as ``\\n`` ones (split on ``\n`` alone, a CR-only file is 0 jobs);
* a file with no job lines (empty, header only) is refused, without a numpy warning;
* job line numbers must be plain ASCII decimals: full-width digits, ``1_000``, ``0x10`` and a
  stray non-ASCII separator byte are refused, while the same characters in comments are fine;
* job numbers and processor counts must be whole numbers (truncated, 0.5 would be a job of size 0);
* job numbers must be unique (the later line is named, with the line it repeats);
* the CLI turns two of these into a one-line ``tiersweep: error: PATH:LINE:``;
* properties (hypothesis): on random SWF-ish bytes the reader returns finite 18-column records
  or raises TraceFormatError naming the file, nothing else; the int, float and line-by-line
  parsers agree; ``write_swf`` tables read back equal.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conftest
from tiersweep.cli import main
from tiersweep.core.errors import TraceFormatError
from tiersweep.core.workloads.swf import N_FIELDS, SwfLog, read_swf, write_swf

#: A valid job line: job 1, runtime 100, 4 processors allocated and requested.
LINE = "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"


def job_line(job: int = 1, runtime: str = "100", alloc: str = "4", req: str = "4") -> str:
    """:data:`LINE` with the job number, runtime and processor counts replaced (as text)."""
    fields = LINE.split()
    fields[0], fields[3], fields[4], fields[7] = str(job), runtime, alloc, req
    return " ".join(fields)


def write(tmp_path, data: bytes | str, name: str = "log.swf"):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def read_error(path, **kwargs) -> str:
    with pytest.raises(TraceFormatError) as info:
        read_swf(path, **kwargs)
    return str(info.value)


# --- 1. CR-only and CRLF line ends ----------------------------------------------------------------


@pytest.mark.parametrize("end", ["\r", "\r\n"], ids=["CR only", "CRLF"])
def test_cr_and_crlf_line_ends_read_as_lf(tmp_path, end):
    lines = ["; MaxProcs: 8", "; Note: old Mac file", "", job_line(1), job_line(2, runtime="50"), "; the end"]
    expected = read_swf(write(tmp_path, "\n".join(lines) + "\n", "lf.swf"))
    log = read_swf(write(tmp_path, end.join(lines) + end))
    assert log.records.shape == (2, N_FIELDS)  # two jobs, not one comment line
    np.testing.assert_array_equal(log.records, expected.records)
    assert log.header == expected.header == {"MaxProcs": "8", "Note": "old Mac file"}


def test_cr_only_error_names_the_right_line(tmp_path):
    path = write(tmp_path, "; MaxProcs: 8\r" + job_line(1) + "\r\r" + job_line(2, alloc="x") + "\r")
    assert read_error(path).startswith(f"{path}:4: malformed job line")


# --- 2. no job lines ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"", b"; MaxProcs: 16\n;\n", b"\n  \n\t\n", b"; MaxProcs: 16\r; Computer: Mac\r", b"; a;b\n   ; c\n"],
    ids=["empty", "header only", "blank lines", "CR-only header", "comments only"],
)
@pytest.mark.parametrize("lenient", [False, True])
def test_a_file_without_job_lines_is_refused_without_a_warning(tmp_path, data, lenient):
    path = write(tmp_path, data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not numpy's "input contained no data"
        message = read_error(path, lenient=lenient)
    assert message == f"{path}: no job lines (expected lines of 18 numbers after the ';' header comments)"


def test_lenient_file_whose_every_job_line_is_malformed_is_refused(tmp_path):
    path = write(tmp_path, "; MaxProcs: 8\n1 2 3\nx\n")
    assert read_error(path, lenient=True).startswith(f"{path}: no job lines left: all 2 were malformed")


# --- 3. only plain ASCII decimal numbers -------------------------------------------------------------


@pytest.mark.parametrize("token", ["１００", "1_000", "0x10", "٣", "1d5", "0b1", "1e", "1.5.2", "+-1", "1e999"])
def test_a_number_that_is_not_plain_ascii_decimal_is_refused(tmp_path, token):
    path = write(tmp_path, f"; MaxProcs: 8\n{job_line(1)}\n{job_line(2, runtime=token)}\n{job_line(3)}\n")
    message = read_error(path)
    assert message.startswith(f"{path}:3: malformed job line: expected 18 numbers")
    assert f"found {token!r}" in message
    log = read_swf(path, lenient=True)
    assert log.malformed_skipped == 1
    assert log.records[:, 0].tolist() == [1, 3]


@pytest.mark.parametrize("byte", [b"\xa0", b"\x85", "\u00a0".encode(), "\u3000".encode()])
def test_a_non_ascii_byte_between_fields_is_refused(tmp_path, byte):
    # numpy reads bytes as Latin-1, where 0xA0 and 0x85 are whitespace: it would read this line.
    bad = job_line(2).encode().replace(b" ", byte, 1)
    path = write(tmp_path, b"; MaxProcs: 8\n" + job_line(1).encode() + b"\n" + bad + b"\n")
    assert read_error(path).startswith(f"{path}:3: malformed job line")


def test_non_ascii_and_underscores_in_comments_are_fine(tmp_path):
    text = (
        "; Computer: Bull x86_64 — Très Grand Centre de calcul (TGCC)\n"
        "; MaxProcs: 8\n"
        f"{job_line(1)} ; run_1 on nœud_7\n"
        f"{job_line(2)}\n"
        "; ünïcödé_trailer\n"
    )
    log = read_swf(write(tmp_path, text))
    assert log.records[:, 0].tolist() == [1, 2]
    assert log.header["Computer"] == "Bull x86_64 — Très Grand Centre de calcul (TGCC)"


@pytest.mark.parametrize(
    ("token", "value"), [("1e2", 100), ("+5", 5), (".5e1", 5), ("4.", 4), ("0.25", 0.25), ("-0", 0), ("007", 7)]
)
def test_plain_spellings_numpy_accepts_read_the_same_on_every_path(tmp_path, token, value):
    good = f"{job_line(1)}\n{job_line(2, runtime=token)}\n"
    fast = read_swf(write(tmp_path, good, "fast.swf"))
    # A malformed line read leniently sends the file down the line-by-line path.
    slow = read_swf(write(tmp_path, good + "bad line\n", "slow.swf"), lenient=True)
    assert fast.records[1, 3] == value
    np.testing.assert_array_equal(fast.records, slow.records)


# --- 4. whole job numbers and processor counts ---------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (job_line(2, alloc="0.5"), "allocated_processors must be a whole number, found 0.5"),
        (job_line(2, req="2.5"), "requested_processors must be a whole number, found 2.5"),
        (job_line(2, req="25e-1"), "requested_processors must be a whole number, found 2.5"),
        (job_line(2, alloc="-1.5"), "allocated_processors must be a whole number, found -1.5"),
        (job_line(2).replace("2", "2.5", 1), "job_number must be a whole number, found 2.5"),
        (job_line(10**20), "job_number must be a whole number from -2**53 to 2**53, found 1e+20"),
    ],
    ids=["alloc 0.5", "req 2.5", "req 25e-1", "alloc -1.5", "job 2.5", "job 1e20"],
)
def test_a_fractional_job_number_or_processor_count_is_refused(tmp_path, line, message):
    path = write(tmp_path, f"; MaxProcs: 8\n{job_line(1, runtime='0.5')}\n\n; x\n{line}\n{job_line(3)}\n")
    assert read_error(path) == f"{path}:5: {message}"
    log = read_swf(path, lenient=True)
    assert log.malformed_skipped == 1
    assert log.records[:, 0].tolist() == [1, 3]


def test_whole_numbers_written_with_a_fraction_or_exponent_are_fine(tmp_path):
    log = read_swf(write(tmp_path, f"{job_line(1, alloc='2.0', req='4.00')}\n{job_line(2, alloc='1e1', req='1E+1')}\n"))
    assert log.records[:, [4, 7]].tolist() == [[2, 4], [10, 10]]


def test_fractional_size_in_a_gzip_file_names_its_line(tmp_path):
    text = "".join(f"{job_line(i)}\n" for i in range(1, 50)) + f"{job_line(50, alloc='3.5')}\n"
    path = write(tmp_path, gzip.compress(text.encode()), "log.swf.gz")
    assert read_error(path) == f"{path}:50: allocated_processors must be a whole number, found 3.5"


# --- 5. unique job numbers -------------------------------------------------------------------------


def test_a_repeated_job_number_is_refused_naming_both_lines(tmp_path):
    text = f"; MaxProcs: 8\n{job_line(3)}\n{job_line(5)}\n\n; x\n{job_line(4)}\n{job_line(5)}\n{job_line(3)}\n"
    path = write(tmp_path, text)
    # Line 7 is the first line repeating an earlier one (line 8 repeats line 2, but comes later).
    assert read_error(path) == f"{path}:7: job number 5 repeats the job on line 3; job numbers must be unique"
    log = read_swf(path, lenient=True)
    assert log.malformed_skipped == 2
    assert log.records[:, 0].tolist() == [3, 5, 4]


def test_lenient_line_by_line_read_drops_repeats_after_malformed_lines(tmp_path):
    # The malformed line 2 shifts records against lines; the later repeats are dropped.
    path = write(
        tmp_path, f"{job_line(1)}\n{job_line(2, runtime='1_0')}\n{job_line(2)}\n{job_line(1)}\n{job_line(2)}\n"
    )
    assert read_error(path).startswith(f"{path}:2: malformed job line")
    log = read_swf(path, lenient=True)
    assert (log.malformed_skipped, log.records[:, 0].tolist()) == (3, [1, 2])


def test_job_numbers_out_of_order_but_unique_are_fine(tmp_path):
    log = read_swf(write(tmp_path, f"{job_line(3)}\n{job_line(1)}\n{job_line(2)}\n"))
    assert log.records[:, 0].tolist() == [3, 1, 2]


@pytest.mark.parametrize(
    "name",
    [
        "CEA-Curie-2011-2.1-cln.swf.gz",
        "CTC-SP2-1996-3.1-cln.swf.gz",
        "HPC2N-2002-2.2-cln.swf.gz",
        "KTH-SP2-1996-2.1-cln.swf.gz",
        "LPC-EGEE-2004-1.2-cln.swf.gz",
        "NASA-iPSC-1993-3.1-cln.swf.gz",
        "SDSC-SP2-1998-4.2-cln.swf.gz",
        "lublin_256.swf.gz",
    ],
)
def test_every_real_trace_still_reads(name):
    log = read_swf(conftest.trace_path(name))
    assert len(log.records) > 10_000 - 1 and log.malformed_skipped == 0
    assert np.all(np.diff(log.records[:, 0]) > 0)


# --- through the CLI -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            f"; MaxProcs: 16\n{job_line(1)}\n{job_line(2, req='0.5')}\n",
            ":3: requested_processors must be a whole number",
        ),
        (f"; MaxProcs: 16\n{job_line(7)}\n;\n{job_line(7)}\n", ":4: job number 7 repeats the job on line 2"),
    ],
    ids=["fractional size", "repeated job number"],
)
def test_the_cli_reports_a_bad_trace_in_one_line(tmp_path, capsys, text, where):
    trace = write(tmp_path, text)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"workload": {"trace": str(trace)}, "platform": {"nodes": 16}}))
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiersweep: error: {trace}{where}")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


# --- properties ------------------------------------------------------------------------------------------

#: Tokens for random job lines: valid numbers, near misses and things Python alone would read.
TOKENS = st.one_of(
    st.integers(-5, 10**6).map(str),
    st.sampled_from(
        [
            "-1",
            "0",
            "0.5",
            "2.5",
            "1e5",
            "1E-3",
            ".5",
            "5.",
            "+3",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "Infinity",
            "0x10",
            "1_000",
            "１００",
            "٣",
            "1e999",
            "1e",
            "abc",
            "",
            ";",
            "; c",
            "\t",
            "\x0b",
            "\x0c",
            "\x1c",
            "\xa0",
            "é",
            "_",
        ]
    ),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4),
)
LINE_ENDS = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def swf_like_bytes(draw) -> bytes:
    """Mixtures of valid lines, lines of random tokens, blank lines, comments and random bytes,
    with random line ends; sometimes gzip-compressed, sometimes then truncated."""
    parts: list[bytes] = []
    for number in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["valid", "valid", "tokens", "mutated", "blank", "comment", "bytes"]))
        if kind == "valid":
            text = job_line(
                draw(st.integers(-2, 30)), alloc=str(draw(st.integers(-1, 64))), req=str(draw(st.integers(-1, 64)))
            )
        elif kind == "tokens":
            text = " ".join(draw(st.lists(TOKENS, min_size=1, max_size=20)))
        elif kind == "mutated":
            fields = job_line(number + 1).split()
            fields[draw(st.integers(0, N_FIELDS - 1))] = draw(TOKENS)
            text = " ".join(fields)
        elif kind == "blank":
            text = draw(st.sampled_from(["", " ", "\t", " \x0c "]))
        elif kind == "comment":
            text = "; " + draw(st.text(max_size=20))
        else:
            parts.append(draw(st.binary(max_size=30)))
            continue
        parts.append(text.encode("utf-8", errors="surrogatepass") + draw(LINE_ENDS).encode())
    data = b"".join(parts)
    packing = draw(st.sampled_from(["plain", "plain", "gzip", "truncated gzip"]))
    if packing != "plain":
        data = gzip.compress(data)
        if packing == "truncated gzip":
            data = data[: draw(st.integers(0, len(data) - 1))]
    return data


def assert_finite_table_or_error_naming(path: str, lenient: bool) -> SwfLog | None:
    try:
        log = read_swf(path, lenient=lenient)
    except TraceFormatError as error:
        assert str(error).startswith(f"{path}:") or str(error).startswith(f"{path} "), str(error)
        return None
    assert isinstance(log, SwfLog)
    assert log.records.dtype == np.float64 and log.records.ndim == 2 and log.records.shape[1] == N_FIELDS
    assert len(log.records) > 0 and np.isfinite(log.records).all()
    whole = log.records[:, [0, 4, 7]]
    assert np.array_equal(whole, np.floor(whole))
    assert len(np.unique(log.records[:, 0])) == len(log.records)
    return log


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=swf_like_bytes())
def test_random_bytes_read_or_raise_trace_format_error_only(data):
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("error")
        path = os.path.join(folder, "random.swf")
        with open(path, "wb") as handle:
            handle.write(data)
        strict = assert_finite_table_or_error_naming(path, lenient=False)
        lenient = assert_finite_table_or_error_naming(path, lenient=True)
        if strict is not None:  # a file read strictly reads the same leniently
            assert lenient is not None and lenient.malformed_skipped == 0
            np.testing.assert_array_equal(strict.records, lenient.records)


#: Random valid tables: unique increasing job numbers, whole sizes, integers or 2-decimal
#: numbers elsewhere (what ``write_swf`` writes exactly).
@st.composite
def valid_tables(draw, integers_only: bool = False) -> np.ndarray:
    rows = draw(st.integers(1, 30))
    gaps = draw(st.lists(st.integers(1, 10**6), min_size=rows, max_size=rows))
    ids = np.cumsum(gaps) - draw(st.integers(0, 3))
    value = (
        st.integers(-1, 2**53)
        if integers_only
        else st.one_of(st.integers(-1, 10**12), st.integers(-(10**9), 10**9).map(lambda c: c / 100))
    )
    table = np.array(
        draw(st.lists(st.lists(value, min_size=N_FIELDS, max_size=N_FIELDS), min_size=rows, max_size=rows)), dtype=float
    )
    table[:, 0] = ids
    for column in (4, 7):
        table[:, column] = draw(st.lists(st.integers(-1, 10**6), min_size=rows, max_size=rows))
    return table


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(table=valid_tables(), name=st.sampled_from(["t.swf", "t.swf.gz"]), lenient=st.booleans())
def test_a_written_table_reads_back_equal(table, name, lenient):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, name)
        write_swf(path, table, header={"MaxProcs": 64, "Note": "x_86 — é"})
        log = read_swf(path, lenient=lenient)
    np.testing.assert_array_equal(log.records, table)
    assert log.header["MaxProcs"] == "64" and log.malformed_skipped == 0


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(table=valid_tables(integers_only=True), end=LINE_ENDS)
def test_the_int_float_and_line_by_line_parsers_agree(table, end):
    """Integer files take numpy's int64 parse; a '.' after the header (here in a comment) the
    float parse; a malformed line read leniently the line-by-line parser."""
    lines = [" ".join(str(int(v)) for v in row) for row in table]
    variants = {"int": lines, "float": [*lines, "; v1.0"], "line by line": [*lines, "not a job line"]}
    with tempfile.TemporaryDirectory() as folder:
        tables = []
        for label, text in variants.items():
            path = os.path.join(folder, f"{label}.swf")
            with open(path, "w", newline="") as handle:
                handle.write(end.join(text) + end)
            tables.append(read_swf(path, lenient=True).records)
    for records in tables:
        np.testing.assert_array_equal(records, table)
