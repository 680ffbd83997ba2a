"""The web approval example, driven by a real Chromium: a click sends the mapped value."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pi_ask_sdk.testing import AskParams, FakeHost

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web_approval.py"
DEPLOY: AskParams = {
    "title": "Release",
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy 2.4?",
            "options": [{"value": "yes", "label": "Ship it"}, {"value": "no", "label": "Hold"}],
        }
    ],
}
OTHER: AskParams = {
    "questions": [
        {"id": "color", "prompt": "Colour?", "options": [{"value": "red", "label": "Approve"}]}
    ]
}  # a label that says "Approve": never a value


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_web_approval", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail(
            "Chromium is needed: bash scripts/install-browser.sh (Debian's chromium "
            "and chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    chrome.set_page_load_timeout(20)
    yield chrome
    chrome.quit()


def test_a_click_sends_the_mapped_value_and_other_forms_get_no_buttons(
    browser: webdriver.Chrome,
) -> None:
    example = load_example()
    host = FakeHost()
    with host.sync_client() as client:
        deploy = host.open(DEPLOY, tool_call_id="web")
        other = host.open(OTHER, tool_call_id="other")
        page = example.ApprovalPage(client, timeout=5)
        page.start()
        try:
            browser.get(page.url)
            assert "Ship it (yes)" in browser.find_element(By.ID, "tool:web").text
            card = browser.find_element(By.ID, "tool:other")
            assert "Not handled here" in card.text
            assert card.find_elements(By.TAG_NAME, "button") == []
            browser.find_element(By.CSS_SELECTOR, '[id="tool:web"] button[value="Reject"]').click()
            WebDriverWait(browser, 10).until(lambda b: "accepted" in b.page_source)
            assert browser.find_elements(By.ID, "tool:web") == []  # answered: gone from the page
        finally:
            page.stop()
    assert deploy.result is not None
    assert deploy.result.answers["deploy"].values == ["no"]
    assert other.is_open  # no button ever fits it


def test_a_post_without_the_page_token_is_refused() -> None:
    example = load_example()
    host = FakeHost()
    with host.sync_client() as client:
        handle = host.open(DEPLOY, tool_call_id="csrf")
        page = example.ApprovalPage(client, timeout=5)
        page.start()
        try:
            request = urllib.request.Request(
                page.url + "answer", data=b"flow=tool%3Acsrf&button=Approve", method="POST"
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 403
        finally:
            page.stop()
    assert handle.is_open
