"""Regenerate docs/report.png, the README's picture of an HTML report: the size question of the
README's planner's workflow (its cog block's `size_cmd`, read from README.md so the picture is
always of the command the README shows) written with -o, opened in the OS's
headless Chromium (tests/test_html_browser.py's browser, every check of that test run on it) and
photographed at 1280 px. Usage: python docs/make_report_png.py [PAGE.html]  (needs the dev
extra and apt's chromium and chromium-driver). Prints what the checks measured."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_html_browser import browser, check_page  # noqa: E402


def readme_size() -> list[str]:
    """The arguments of README.md's `size_cmd = "roofline size ..."`, less its own `-o FILE`."""
    readme = (ROOT / "README.md").read_text()
    found = re.search(r'^size_cmd = "roofline (size [^"]+)"$', readme, re.M)
    if found is None:
        sys.exit('docs/make_report_png.py: README.md has no line size_cmd = "roofline size ..."')
    words = shlex.split(found.group(1))
    for flag in ("-o", "--out"):
        if flag in words:
            del words[words.index(flag) : words.index(flag) + 2]
    return words


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp) / "plan.html"
        size = readme_size()
        cmd = [sys.executable, "-m", "roofline", *size, "--format", "json", "-o", str(page)]
        doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        driver = browser()
        try:
            measured = check_page(driver, page, doc, Path(tmp))
            driver.set_window_size(1280, 900)
            driver.get(page.as_uri())
            driver.save_screenshot(str(ROOT / "docs" / "report.png"))
        finally:
            driver.quit()
    print(json.dumps(measured, indent=1))
    print(f"wrote {ROOT / 'docs' / 'report.png'}")


if __name__ == "__main__":
    main()
