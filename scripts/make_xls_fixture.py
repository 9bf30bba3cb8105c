#!/usr/bin/env python3
"""Writes api/tests/it/fixtures/vehicles.xls, the Excel 97-2003 file the
vehicle/batch_convert tests upload (XLSX files are built by the tests
themselves with rust_xlsxwriter; no Rust crate writes XLS).

    python3 -m venv /tmp/xl && /tmp/xl/bin/pip install xlwt==1.3.0
    /tmp/xl/bin/python scripts/make_xls_fixture.py

Columns, in the order the test passes as `fields`: label, model, reg_number,
fuel_tank_volume, norm_avg_fuel_consumption, liability_insurance_valid_till.
"""
import datetime
import pathlib

import xlwt

OUT = pathlib.Path(__file__).resolve().parent.parent / "api/tests/it/fixtures/vehicles.xls"

book = xlwt.Workbook(encoding="utf-8")
sheet = book.add_sheet("Vehicles")
date_style = xlwt.easyxf(num_format_str="YYYY-MM-DD")
rows = [
    ("Truck 1", "Volvo FH", "A 001 AA", 400, 28.5, datetime.date(2027, 3, 1)),
    ("Грузовик 2", "КамАЗ 5490", "B 002 BB", 600, 31.25, datetime.date(2026, 12, 31)),
    # A blank row is skipped, not converted.
    None,
    # A bad line: no label, a negative tank volume.
    ("", "MAN TGX", "C 003 CC", -5, 30, None),
]
r = 0
for row in rows:
    if row is not None:
        for c, value in enumerate(row):
            if value is None:
                continue
            if isinstance(value, datetime.date):
                sheet.write(r, c, value, date_style)
            else:
                sheet.write(r, c, value)
    r += 1
book.save(str(OUT))
print(f"wrote {OUT}")
