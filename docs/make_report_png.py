"""Regenerate docs/report.png, the README's picture of an HTML report: the size question of the
README (llama-3.1-70b at 20 requests/s on four chips) written with -o, opened in the OS's
headless Chromium (tests/test_html_browser.py's browser, every check of that test run on it) and
photographed at 1280 px. Usage: python docs/make_report_png.py [PAGE.html]  (needs the dev
extra and apt's chromium and chromium-driver). Prints what the checks measured."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_html_browser import browser, check_page  # noqa: E402

SIZE = [
    "size", "llama-3.1-70b", "--rate", "20", "--hardware", "h100,h200,b200,mi300x",
    "--prompt-dist", "lognormal:mean=2000,sigma=0.9", "--output", "300",
    "--slo-ttft", "1s", "--slo-tpot", "50ms",
]  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp) / "plan.html"
        cmd = [sys.executable, "-m", "roofline", *SIZE, "--format", "json", "-o", str(page)]
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
