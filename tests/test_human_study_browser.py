"""End-to-end: the rating page in headless Chromium → Save → ratings.csv → tally.

Needs Debian's ``chromium`` + ``chromium-driver`` and the ``selenium`` PyPI package; skips
with the reason otherwise. Runs fully offline (file:// page, networking features disabled).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from backretrieval.study.human_study import make_sheets
from backretrieval.study.human_tally import tally

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium chromium-driver)"),
    pytest.mark.skipif(DRIVER is None, reason="chromedriver not installed (apt-get install chromium-driver)"),
]

NAMES = ("ModelA", "ModelB")


@pytest.fixture()
def driver(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        opts.add_argument(flag)
    opts.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(downloads),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        },
    )
    try:
        drv = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    except Exception as exc:  # pragma: no cover - environment problem, not a product bug
        pytest.skip(f"headless chromium could not start: {exc}")
    drv.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    drv.downloads = downloads  # type: ignore[attr-defined]
    try:
        yield drv
    finally:
        drv.quit()


def _wait_for(path: Path, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.is_file() and path.stat().st_size > 0 and not list(path.parent.glob("*.crdownload")):
            return
        time.sleep(0.1)
    raise AssertionError(f"{path} not downloaded within {timeout}s (folder: {list(path.parent.iterdir())})")


def test_rate_in_browser_save_and_tally(driver, tmp_path):
    from selenium.webdriver.common.by import By

    queries = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["<script>alert(1)</script> soup", "cake"]})
    sa = {"q1": [(f"a{i}", f"نص {i}") for i in range(5)], "q2": [(f"c{i}", f"c text {i}") for i in range(5)]}
    sb = {
        "q1": [("a0", "نص 0")] + [(f"b{i}", f"b text {i}") for i in range(4)],
        "q2": [(f"d{i}", f"d text {i}") for i in range(5)],
    }
    sheets = make_sheets(
        queries, sa, sb, tmp_path / "sheet", seed=3, model_names=NAMES, query_lang="en", suggestion_lang="ar"
    )
    key = json.loads(sheets.key.read_text())["suggestions"]
    assert len(key) == 19

    driver.get(sheets.html.resolve().as_uri())
    # the hostile query text is shown literally (escaped), not executed (an alert would also
    # make every later WebDriver command fail with UnexpectedAlertPresentException)
    texts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".qtext")]
    assert "<script>alert(1)</script> soup" in texts
    counter = driver.find_element(By.ID, "counter")
    assert counter.text.startswith("0 rated, 19 unrated")
    # the browser lays the Arabic suggestions out right to left, the English query left to right
    assert driver.find_element(By.CSS_SELECTOR, ".stext").value_of_css_property("direction") == "rtl"
    assert driver.find_element(By.CSS_SELECTOR, ".qtext").value_of_css_property("direction") == "ltr"

    # the rater: 1 for every suggestion ModelA proposed (incl. the shared one), 3 for the rest
    expected: dict[str, int] = {}
    for el in driver.find_elements(By.CSS_SELECTOR, ".suggestion"):
        sid = el.get_attribute("data-sid")
        value = 1 if NAMES[0] in key[sid]["models"] else 3
        expected[sid] = value
        el.find_element(By.CSS_SELECTOR, f"label[for='r-{sid}-{value}']").click()
    assert len(expected) == 19
    assert counter.text.startswith("19 rated, 0 unrated")

    # without a rater id the page refuses to save
    driver.find_element(By.ID, "save").click()
    assert "rater id" in driver.find_element(By.ID, "status").text
    time.sleep(0.5)
    assert not list(driver.downloads.iterdir())
    driver.find_element(By.ID, "rater").send_keys("rater-07")
    driver.find_element(By.ID, "save").click()
    out = driver.downloads / "ratings.csv"
    _wait_for(out)
    got = pd.read_csv(out, dtype=str)
    assert list(got.columns) == ["suggestion_id", "rating", "rater", "key_sha256"]
    assert set(got["rater"]) == {"rater-07"}
    assert dict(zip(got["suggestion_id"], got["rating"].astype(int))) == expected
    assert "all suggestions rated" in driver.find_element(By.ID, "status").text

    res = tally(out, sheets.key, NAMES)
    assert res.key_verified and not res.simulated and res.raters == ["rater-07"]
    assert res.counts[NAMES[0]] == {1: 10, 2: 0, 3: 0, 4: 0}
    assert res.counts[NAMES[1]] == {1: 1, 2: 0, 3: 9, 4: 0}
    assert res.ratio_very_relevant == pytest.approx(10.0)


def test_very_long_words_wrap_inside_the_viewport(driver, tmp_path):
    """A 5,000-character title without spaces wraps: the page is no wider than the window."""
    word = "Ü" + "x" * 4999
    queries = pd.DataFrame({"query_id": ["q1"], "text": [word]})
    sa = {"q1": [(f"a{i}", word if i == 0 else f"a text {i}") for i in range(5)]}
    sb = {"q1": [(f"b{i}", f"b text {i}") for i in range(5)]}
    sheets = make_sheets(queries, sa, sb, tmp_path / "sheet", seed=1, model_names=NAMES)
    driver.set_window_size(1024, 768)
    driver.get(sheets.html.resolve().as_uri())
    width = driver.execute_script("return document.documentElement.clientWidth")
    scroll = driver.execute_script("return document.documentElement.scrollWidth")
    assert width > 0 and scroll <= width, f"page is {scroll}px wide in a {width}px viewport"
    # the query's text box stays inside the page, below the sticky header
    box = driver.execute_script(
        "const r = document.querySelector('.qtext').getBoundingClientRect(); return [r.left, r.right];"
    )
    assert 0 <= box[0] and box[1] <= width
