"""The SWF reader and writer (core/workloads/swf.py).

Covers: gzip detected by content (a .gz file, a plain file, a gzip file not named .gz and a
plain file that is named .gz); header comments (``; Key: value``, leading spaces, trailing
remarks, first occurrence wins) and :func:`header_int` (MaxProcs, then MaxNodes); exact
write -> read round trips of integers and 2-decimal floats; malformed job lines (wrong field
count, non-numbers, nan/inf) raising :class:`TraceFormatError` that names the file, the 1-based
line number and what was expected, or skipped and counted with ``lenient=True``; and the real
KTH-SP2 log.

Every file is written here as raw text (or raw gzip bytes), so each byte is under control.
"""

from __future__ import annotations

import gzip
import os
import warnings

import numpy as np
import pytest

from tiersweep.core.errors import TraceFormatError
from tiersweep.core.workloads.swf import SWF_FIELDS, SwfLog, header_int, read_swf, write_swf

GZIP_MAGIC = b"\x1f\x8b"


def job_line(job: int = 1, submit: float = 0, run: float = 10, procs: int = 1, req: float = 100) -> str:
    """One well-formed 18-field SWF job line (allocated = requested processors)."""
    fields = [job, submit, -1, run, procs, -1, -1, procs, req, -1, 1, 7, 3, -1, -1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def row(job: int, submit: float, run: float, procs: int, req: float) -> list[float]:
    """The record :func:`job_line` with the same arguments reads back as."""
    return [job, submit, -1, run, procs, -1, -1, procs, req, -1, 1, 7, 3, -1, -1, -1, -1, -1]


PLAIN_TEXT = (
    "; Version: 2.2\n"
    "; MaxProcs: 128\n"
    ";\n"
    f"{job_line(1, 0, 10, 4, 60)}\n"
    f"{job_line(2, 5, 20, 8, 120)}\n"
    f"{job_line(3, 9, 0, 1, -1)}\n"
)
PLAIN_ROWS = [row(1, 0, 10, 4, 60), row(2, 5, 20, 8, 120), row(3, 9, 0, 1, -1)]


# --- reading: plain and gzip, detected by content --------------------------------------------


def test_reads_plain_file_records_in_file_order(tmp_path):
    path = tmp_path / "plain.swf"
    path.write_text(PLAIN_TEXT)
    log = read_swf(path)
    assert isinstance(log, SwfLog)
    assert log.records.dtype == np.float64
    assert log.records.shape == (3, 18)
    np.testing.assert_array_equal(log.records, np.array(PLAIN_ROWS, dtype=float))
    assert log.header["MaxProcs"] == "128"
    assert log.header["Version"] == "2.2"
    assert log.malformed_skipped == 0
    assert log.path == str(path)


def test_reads_gzip_file_named_gz(tmp_path):
    path = tmp_path / "log.swf.gz"
    path.write_bytes(gzip.compress(PLAIN_TEXT.encode()))
    log = read_swf(path)
    np.testing.assert_array_equal(log.records, np.array(PLAIN_ROWS, dtype=float))
    assert log.header["MaxProcs"] == "128"


def test_reads_gzip_file_not_named_gz(tmp_path):
    # Detection is by the gzip magic bytes, not by the extension.
    path = tmp_path / "compressed_but_named.swf"
    path.write_bytes(gzip.compress(PLAIN_TEXT.encode()))
    assert path.read_bytes()[:2] == GZIP_MAGIC
    log = read_swf(path)
    np.testing.assert_array_equal(log.records, np.array(PLAIN_ROWS, dtype=float))
    assert log.header["MaxProcs"] == "128"


def test_reads_plain_file_named_gz(tmp_path):
    path = tmp_path / "not_really.swf.gz"
    path.write_text(PLAIN_TEXT)
    log = read_swf(path)
    np.testing.assert_array_equal(log.records, np.array(PLAIN_ROWS, dtype=float))


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_swf(tmp_path / "absent.swf")


def test_columns_follow_swf_field_order(tmp_path):
    path = tmp_path / "cols.swf"
    path.write_text(" ".join(str(v) for v in range(101, 119)) + "\n")
    log = read_swf(path)
    assert len(SWF_FIELDS) == 18
    assert log.column["job_number"] == 0
    assert log.column["submit_time"] == 1
    assert log.column["run_time"] == 3
    assert log.column["allocated_processors"] == 4
    assert log.column["requested_processors"] == 7
    assert log.column["requested_time"] == 8
    assert log.records[0, log.column["requested_processors"]] == 108
    assert log.records[0, log.column["requested_time"]] == 109


def test_a_header_only_file_is_refused_as_having_no_job_lines(tmp_path):
    # (It read as an empty table, and a run of it as 0 jobs, silently.)
    from tiersweep.core.errors import TraceFormatError

    path = tmp_path / "empty.swf"
    path.write_text("; MaxProcs: 16\n;\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and numpy's empty-table warning is not shown
        with pytest.raises(TraceFormatError, match=f"^{path}: no job lines"):
            read_swf(path)


# --- header comments --------------------------------------------------------------------------


def test_header_with_leading_spaces_and_trailing_remark(tmp_path):
    path = tmp_path / "remark.swf"
    path.write_text(f"   ;   MaxNodes: 338 (batch partition; 512 total)\n\t; Computer:   IBM SP2   \n{job_line()}\n")
    log = read_swf(path)
    assert log.header["MaxNodes"] == "338 (batch partition; 512 total)"
    assert log.header["Computer"] == "IBM SP2"
    assert header_int(log.header, "MaxNodes") == 338
    assert log.records.shape == (1, 18)


def test_header_digits_grouped_by_commas_are_one_number(tmp_path):
    """``MaxProcs: 1,024`` read as its first group would shrink the machine to one processor."""
    path = tmp_path / "grouped.swf"
    path.write_text(f"; MaxProcs: 1,024\n; MaxNodes: 338, batch\n{job_line()}\n")
    log = read_swf(path)
    assert header_int(log.header, "MaxProcs") == 1024
    assert header_int(log.header, "MaxNodes") == 338


def test_header_first_occurrence_of_a_key_wins(tmp_path):
    path = tmp_path / "twice.swf"
    path.write_text(f"; MaxProcs: 64\n; MaxProcs: 32\n{job_line()}\n")
    assert read_swf(path).header["MaxProcs"] == "64"


def test_header_int_reads_maxprocs_before_maxnodes():
    header = {"MaxNodes": "338 (batch partition; 512 total)", "MaxProcs": "512"}
    assert header_int(header, "MaxProcs", "MaxNodes") == 512
    assert header_int(header, "MaxNodes", "MaxProcs") == 338


def test_header_int_falls_back_to_maxnodes_and_none_when_absent():
    assert header_int({"MaxNodes": "338 (batch partition; 512 total)"}, "MaxProcs", "MaxNodes") == 338
    assert header_int({"Version": "2.2"}, "MaxProcs", "MaxNodes") is None
    assert header_int({}, "MaxProcs", "MaxNodes") is None


def test_header_int_from_a_read_file(tmp_path):
    path = tmp_path / "both.swf"
    path.write_text(f"; MaxNodes: 100\n; MaxProcs: 200 (2 per node)\n{job_line()}\n")
    log = read_swf(path)
    assert header_int(log.header, "MaxProcs", "MaxNodes") == 200


def test_header_values_of_crlf_file_have_no_carriage_return(tmp_path):
    path = tmp_path / "crlf.swf"
    path.write_bytes(f"; MaxProcs: 128\r\n; Computer: IBM SP2\r\n{job_line()}\r\n".encode())
    log = read_swf(path)
    assert log.records.shape == (1, 18)
    assert log.header["Computer"] == "IBM SP2"
    assert log.header["MaxProcs"] == "128"


# --- writing and round trips --------------------------------------------------------------------


ROUND_TRIP = np.array(
    [
        [1, 0, 12, 3600, 64, 3599.5, -1, 64, 7200, -1, 1, 3, 1, -1, 1, 1, -1, -1],
        [2, 17, 0, 0, 1, 0.25, 1024, 1, -1, 2048, 0, 4, 2, 7, 1, 1, 1, 60],
        [3, 1234567890, -1, 12.75, 128, -1, -1, -1, 86400, -1, 5, 1, 1, -1, -1, -1, -1, -1],
    ],
    dtype=float,
)


@pytest.mark.parametrize("name", ["out.swf", "out.swf.gz"])
def test_write_then_read_round_trips_exactly(tmp_path, name):
    path = tmp_path / name
    write_swf(path, ROUND_TRIP, header={"MaxProcs": 128, "Note": "written by a test"})
    log = read_swf(path)
    assert log.records.shape == ROUND_TRIP.shape
    assert np.array_equal(log.records, ROUND_TRIP)
    assert log.header["MaxProcs"] == "128"
    assert log.header["Note"] == "written by a test"
    assert header_int(log.header, "MaxProcs", "MaxNodes") == 128


@pytest.mark.parametrize("name", ["many.swf", "many.swf.gz"])
def test_round_trip_of_many_random_integers_and_two_decimal_floats(tmp_path, name):
    rng = np.random.default_rng(12345)
    integers = rng.integers(-1, 10**9, size=(300, 18)).astype(float)
    cents = rng.integers(-(10**9), 10**9, size=(300, 18)) / 100.0
    table = np.where(rng.random((300, 18)) < 0.5, integers, cents)
    # Job numbers are unique and processor counts whole, as the reader requires.
    table[:, 0] = np.arange(1, 301)
    table[:, [4, 7]] = integers[:, [4, 7]]
    path = tmp_path / name
    write_swf(path, table)
    assert np.array_equal(read_swf(path).records, table)


def test_write_compresses_only_when_named_gz(tmp_path):
    gz, plain = tmp_path / "a.swf.gz", tmp_path / "a.swf"
    write_swf(gz, ROUND_TRIP)
    write_swf(plain, ROUND_TRIP)
    assert gz.read_bytes()[:2] == GZIP_MAGIC
    assert plain.read_bytes()[:2] != GZIP_MAGIC
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()


def test_write_formats_integers_plainly_and_floats_with_two_decimals(tmp_path):
    path = tmp_path / "fmt.swf"
    write_swf(path, [[1, 0, -1, 12.5, 4, 3.25, -1, 4, 60, -1, 1, 1, 1, -1, -1, -1, -1, -1]], header={"MaxProcs": 4})
    assert path.read_text() == "; MaxProcs: 4\n1 0 -1 12.50 4 3.25 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n"


def test_write_accepts_list_of_rows_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "rows.swf"
    write_swf(path, PLAIN_ROWS)
    assert sorted(os.listdir(tmp_path)) == ["rows.swf"]
    np.testing.assert_array_equal(read_swf(path).records, np.array(PLAIN_ROWS, dtype=float))


def test_write_replaces_an_existing_file(tmp_path):
    path = tmp_path / "again.swf"
    write_swf(path, PLAIN_ROWS)
    write_swf(path, PLAIN_ROWS[:1])
    assert read_swf(path).records.shape == (1, 18)


# --- malformed lines ----------------------------------------------------------------------------


def _bad_file(tmp_path, bad_line: str, name: str = "bad.swf"):
    """Header (2 lines), a good job, a blank line, the bad line (line 5), another good job."""
    path = tmp_path / name
    path.write_text(f"; MaxProcs: 8\n;\n{job_line(1)}\n\n{bad_line}\n{job_line(3, submit=4)}\n")
    return path


def test_wrong_field_count_names_file_line_and_expected_fields(tmp_path):
    fields = job_line(2).split()
    path = _bad_file(tmp_path, " ".join(fields[:17]))
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    message = str(info.value)
    assert str(path) in message
    assert f"{path}:5:" in message
    assert "18" in message and "fields" in message
    assert "17" in message


def test_too_many_fields_is_malformed(tmp_path):
    path = _bad_file(tmp_path, job_line(2) + " 99")
    with pytest.raises(TraceFormatError, match=r":5:.*18.*found 19"):
        read_swf(path)


def test_single_line_file_with_wrong_field_count_is_line_1(tmp_path):
    path = tmp_path / "one.swf"
    path.write_text("1 2 3\n")
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    assert f"{path}:1:" in str(info.value)


def test_error_in_gzip_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.swf.gz"
    text = f"; MaxProcs: 8\n{job_line(1)}\n{job_line(2)} 5\n"
    path.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    assert f"{path}:3:" in str(info.value)


@pytest.mark.parametrize("token", ["abc", "12x", "1,5", "nan", "NaN", "inf", "-inf", "Infinity"])
def test_non_finite_or_non_numeric_field_names_file_line_and_expected_numbers(tmp_path, token):
    fields = job_line(2).split()
    fields[3] = token  # the runtime
    path = _bad_file(tmp_path, " ".join(fields))
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    message = str(info.value)
    assert f"{path}:5:" in message
    assert "18 numbers" in message


def test_trace_format_error_is_a_value_error(tmp_path):
    path = _bad_file(tmp_path, "x")
    with pytest.raises(ValueError):
        read_swf(path)


def test_non_numeric_field_message_names_the_offending_token(tmp_path):
    fields = job_line(2).split()
    fields[3] = "abc"
    path = _bad_file(tmp_path, " ".join(fields))
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    assert "found 'abc'" in str(info.value)


def test_lenient_skips_and_counts_malformed_lines(tmp_path):
    path = tmp_path / "mixed.swf"
    bad_count = " ".join(job_line(2).split()[:17])
    bad_nan = job_line(3).replace(" 10 ", " nan ", 1)
    bad_word = job_line(4).replace(" 10 ", " ten ", 1)
    path.write_text(
        "; MaxProcs: 8\n"
        f"{job_line(1, submit=0)}\n"
        f"{bad_count}\n"
        f"{bad_nan}\n"
        f"{job_line(5, submit=3)}\n"
        f"{bad_word}\n"
        f"{job_line(6, submit=7)}\n"
    )
    with pytest.raises(TraceFormatError):
        read_swf(path)
    log = read_swf(path, lenient=True)
    assert log.malformed_skipped == 3
    assert log.records[:, 0].tolist() == [1, 5, 6]
    np.testing.assert_array_equal(log.records[1], np.array(row(5, 3, 10, 1, 100), dtype=float))
    assert log.header["MaxProcs"] == "8"


def test_lenient_on_clean_file_skips_nothing(tmp_path):
    path = tmp_path / "clean.swf"
    path.write_text(PLAIN_TEXT)
    log = read_swf(path, lenient=True)
    assert log.malformed_skipped == 0
    np.testing.assert_array_equal(log.records, np.array(PLAIN_ROWS, dtype=float))


def test_lenient_gzip_file_not_named_gz(tmp_path):
    path = tmp_path / "mixed.dat"
    text = f"{job_line(1)}\n1 2 3\n{job_line(2, submit=1)}\n"
    path.write_bytes(gzip.compress(text.encode()))
    log = read_swf(path, lenient=True)
    assert log.malformed_skipped == 1
    assert log.records[:, 0].tolist() == [1, 2]


# --- the real KTH-SP2 log -----------------------------------------------------------------------


def test_kth_sp2_log_records_and_header(kth_path):
    log = read_swf(kth_path)
    assert log.records.shape == (28476, 18)
    assert log.malformed_skipped == 0
    assert log.header["MaxProcs"] == "100"
    assert header_int(log.header, "MaxProcs", "MaxNodes") == 100
    # The first job line of the cleaned log is job 15, submitted at 599850 on 4 processors.
    assert log.records[0, 0] == 15
    assert log.records[0, 1] == 599850
    assert log.records[0, 7] == 4
