"""The one table of units and date formats (sim/core/display.py): what people read and what files carry."""
from datetime import datetime, timedelta, timezone

import pytest

from sim.core.display import QUANTITIES, column, human, iso_utc, significant, table


@pytest.mark.parametrize("name,value,text", [
    ("bytes", 4 * 2 ** 30, "4 GiB"), ("bytes", 801266158, "764 MiB"), ("bytes", 512, "512 B"),
    ("rate", 0.5, "500 MB/s"), ("rate", 38.155, "38.2 GB/s"), ("rate", 2000, "2 TB/s"),
    ("duration", 5400, "1.5 h"), ("duration", 0.0123, "12.3 ms"), ("power", 24.3e6, "24.3 MW"),
    ("power", 700, "700 W"), ("energy", 1.5e9, "1.5 GWh"), ("percent", 40, "40 %"),
])
def test_a_value_takes_the_largest_unit_it_reaches_with_three_digits(name, value, text):
    assert human(name, value) == text


def test_every_ladder_grows_and_starts_at_or_below_its_file_unit():
    for q in QUANTITIES.values():
        sizes = [size for _, size in q.ladder]
        assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes), q.name
        assert sizes[0] <= 1 <= sizes[-1], q.name
    assert table()["quantities"]["rate"]["unit"] == "GBps"


def test_significant_digits_and_thousands():
    assert [significant(x) for x in (1.234, 12.34, 123.4, 1234.5, 0.01234)] == ["1.23", "12.3", "123", "1,234",
                                                                                 "0.0123"]


def test_files_carry_utc_iso_and_units_in_column_names():
    moment = datetime(2026, 12, 7, 23, 31, 5, tzinfo=timezone(timedelta(hours=1)))
    assert iso_utc(moment) == "2026-12-07T22:31:05Z" and iso_utc(0) == "1970-01-01T00:00:00Z"
    assert column("busbw", "rate") == "busbw_GBps" and column("time_to_durable", "duration") == "time_to_durable_s"
