"""The interactive app in a real headless browser (Debian's chromium driven by Playwright): type a prompt, get
topic chips, pick one, watch the continuation stream in, stop it, accept a finished one and undo. `.ci/run`
installs chromium where it is missing, so CI runs this test."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
playwright = pytest.importorskip("playwright.sync_api")

from genfeat.models.interactive.inference import load_run  # noqa: E402
from genfeat.serve.interactive import create_app  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOT = os.environ.get("GENFEAT_APP_SCREENSHOT")  # docs/interactive_app.png was taken with this set
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (`.ci/run` installs Debian's)")


@pytest.fixture(scope="module")
def server(small_run):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(load_run(small_run))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


def test_prompt_topics_stream_stop_accept_undo(server, tmp_path):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(server)
        page.fill("#prompt", "s1 t3w1 t3w2 s2 t3w5 s3 t3w0 .")
        page.click("#suggest")
        page.wait_for_selector(".chip")
        assert page.locator(".chip").count() == 4
        page.locator(".chip").first.click()
        assert "on" in page.locator(".chip").first.get_attribute("class")
        page.click("#go")
        page.wait_for_function("document.getElementById('out').textContent.trim().split(' ').length >= 5")
        page.wait_for_function("document.getElementById('stats').textContent.includes('tokens/s')")
        assert "first token" in page.text_content("#stats")
        page.screenshot(path=SHOT or str(tmp_path / "app.png"))
        before = page.input_value("#prompt")
        page.click("#accept")
        assert page.input_value("#prompt").startswith(before) and len(page.input_value("#prompt")) > len(before)
        page.click("#undo")
        assert page.input_value("#prompt") == before
        # stop: a long continuation, stopped while it streams
        page.evaluate("document.getElementById('words').value = 't5w0'")
        page.route("**/api/generate", lambda route: route.continue_(post_data=route.request.post_data.replace(
            '"words":["t5w0"]', '"words":["t5w0"],"max_new_tokens":100')))
        page.click("#go")
        page.wait_for_function("document.getElementById('out').textContent.length > 0")
        page.click("#stop")  # (the server side of stop: test_serve.py proves the worker is freed within a step)
        page.wait_for_function("document.getElementById('stats').textContent === 'stopped' || "
                               "document.getElementById('stats').textContent.includes('tokens/s')")
        assert page.is_enabled("#go") and not page.is_enabled("#stop")
        browser.close()
