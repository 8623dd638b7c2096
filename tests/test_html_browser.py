"""The HTML reports in a real browser (issue 27): headless Chromium from the OS packages driven
by Selenium through the OS's chromedriver (explicit paths, SE_OFFLINE: nothing is downloaded).
One browser session opens every page from file:// and checks: no console errors, no network
request, every chart drawn, the headline numbers in the DOM equal to the JSON's, a screenshot
at 1280 px that is not blank, and at 390 px no horizontal scroll with the answer in the first
viewport. Outside CI a machine without Chromium skips; in CI (CI set) it fails."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from tests.html_pages import COMMANDS, lookup, make

# dealt to test_html.py's worker (tests/conftest.py): the pages it made are not made again
TRAVELS_WITH = "tests/test_html.py"


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra)"
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "no chromium on PATH (apt-get install chromium chromium-driver)"
    if not shutil.which("chromedriver"):
        return "no chromedriver on PATH (apt-get install chromium-driver)"
    return None


def browser():
    """Headless Chromium with console and network logs, from explicit OS paths."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager never fetches a browser or driver
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--hide-scrollbars", "--force-device-scale-factor=1"):  # fmt: skip
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver"))
    return webdriver.Chrome(service=service, options=opts)


def png_variety(png: bytes) -> int:
    """Distinct byte values in a PNG's pixel rows (filtered), a blank page has a handful: read
    from the IDAT chunks (PNG spec, ISO/IEC 15948) without an imaging library."""
    data, i = b"", 8
    while i < len(png):
        (n,) = struct.unpack(">I", png[i : i + 4])
        if png[i + 4 : i + 8] == b"IDAT":
            data += png[i + 8 : i + 8 + n]
        i += 12 + n
    return len(set(zlib.decompress(data)))


@pytest.fixture(scope="module")
def driver():
    why = _missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test runs in CI: {why}")
        pytest.skip(why)
    d = browser()
    yield d
    d.quit()


CHECK_DOM = """
const out = {charts: [], figures: []};
for (const s of document.querySelectorAll('svg.chart')) {
  const r = s.getBoundingClientRect();
  const marks = s.querySelectorAll('rect,circle,polyline').length;
  out.charts.push({w: r.width, h: r.height, marks: marks});
}
for (const e of document.querySelectorAll('[data-value]')) {
  out.figures.push({path: e.dataset.json, value: e.dataset.value, text: e.textContent});
}
out.scrollWidth = document.documentElement.scrollWidth;
out.clientWidth = document.documentElement.clientWidth;
const a = document.querySelector('#answer .verdict') || document.querySelector('#answer');
out.answerBottom = a.getBoundingClientRect().bottom;
out.viewport = window.innerHeight;
return out;
"""


def check_page(driver, page: Path, doc: dict, shots: Path) -> dict:
    """Every check on one page; returns what it measured (the page's size, its charts)."""
    name = page.stem
    size = page.stat().st_size
    assert size < 1_000_000, name
    driver.get_log("browser")  # start both logs empty
    driver.get_log("performance")
    driver.set_window_size(1280, 900)
    driver.get(page.as_uri())
    dom = driver.execute_script(CHECK_DOM)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, (name, errors)
    requests = [
        json.loads(e["message"])["message"]["params"].get("request", {}).get("url", "")
        for e in driver.get_log("performance")
        if '"Network.requestWillBeSent"' in e["message"]
    ]
    assert requests and all(u.startswith("file://") for u in requests), (name, requests)
    assert dom["charts"], name
    for c in dom["charts"]:
        assert c["w"] > 100 and c["h"] > 50 and c["marks"] > 1, (name, c)
    assert len(dom["figures"]) >= 4, name
    for f in dom["figures"]:
        assert json.loads(f["value"]) == lookup(doc, f["path"]), (name, f)
        assert f["text"].strip(), (name, f)
    png = base64.b64decode(driver.get_screenshot_as_base64())
    (shots / f"{name}-1280.png").write_bytes(png)
    variety = png_variety(png)
    assert variety > 50, name
    driver.set_window_size(390, 844)
    narrow = driver.execute_script(CHECK_DOM)
    assert narrow["scrollWidth"] <= narrow["clientWidth"], (name, narrow["scrollWidth"])
    assert narrow["answerBottom"] <= narrow["viewport"], (name, narrow["answerBottom"])
    return {
        "bytes": size,
        "charts": len(dom["charts"]),
        "figures": len(dom["figures"]),
        "requests": requests,
        "png_variety": variety,
        "scroll_width_390": narrow["scrollWidth"],
        "answer_bottom_390": narrow["answerBottom"],
    }


def print_pdf(driver, page: Path, tries: int = 3) -> bytes:
    """The page printed to PDF by the browser. Headless Chromium's print fails now and then
    under CPU load ('unhandled inspector error: Printing failed', once in two fresh-clone CI
    runs at 408b6d3, with mypy and the wheel build beside the tests): the page is loaded and
    printed again, up to `tries` times; what the PDF must hold is checked by the caller."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.print_page_options import PrintOptions

    for attempt in range(tries):
        driver.get(page.as_uri())
        try:
            return base64.b64decode(driver.print_page(PrintOptions()))
        except WebDriverException as exc:
            if "Printing failed" not in str(exc) or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")  # (the loop returns or raises)


def test_every_page_in_chromium(driver, tmp_path):
    shots = tmp_path / "screenshots"  # screenshots stay out of git
    shots.mkdir()
    for name in COMMANDS:
        page, doc = make(name, tmp_path)
        check_page(driver, page, doc, shots)
        if name == "size":  # printed: the print stylesheet lays it out on pages
            pdf = print_pdf(driver, page)
            pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
            assert pdf.startswith(b"%PDF") and 1 <= pages <= 30, pages
            (shots / "size.pdf").write_bytes(pdf)


def test_blank_png_has_little_variety(driver, tmp_path):
    """The screenshot check can fail: a blank page is caught."""
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    driver.set_window_size(1280, 900)
    driver.get(Path(blank).as_uri())
    assert png_variety(base64.b64decode(driver.get_screenshot_as_base64())) <= 50


def test_print_pdf_tries_again_only_when_printing_failed(tmp_path):
    """print_pdf loads and prints again after Chromium's 'Printing failed', and passes any other
    error on at once (a stand-in driver: no browser needed)."""
    pytest.importorskip("selenium")
    from selenium.common.exceptions import InvalidArgumentException

    class Flaky:
        def __init__(self, errors):
            self.errors, self.loads = list(errors), 0

        def get(self, uri):
            self.loads += 1

        def print_page(self, options):
            if self.errors:
                raise self.errors.pop(0)
            return base64.b64encode(b"%PDF-1.4").decode()

    page = tmp_path / "p.html"
    flaky = Flaky([InvalidArgumentException("unhandled inspector error: Printing failed")])
    assert print_pdf(flaky, page) == b"%PDF-1.4" and flaky.loads == 2
    other = Flaky([InvalidArgumentException("no such window")])
    with pytest.raises(InvalidArgumentException):
        print_pdf(other, page)
    assert other.loads == 1
    always = Flaky([InvalidArgumentException("Printing failed")] * 3)
    with pytest.raises(InvalidArgumentException):
        print_pdf(always, page)
    assert always.loads == 3
