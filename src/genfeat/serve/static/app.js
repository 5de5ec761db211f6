// The interactive writing UI: plain JavaScript over the JSON API (/api/options, /api/generate as server-sent
// events read with fetch so that the stop button can abort the request).
const $ = (id) => document.getElementById(id);
let chosen = new Set();
let controller = null;
let history = [];

function fail(msg) { $("error").textContent = msg; }

async function suggest() {
  fail("");
  const res = await fetch("/api/options", {method: "POST", headers: {"Content-Type": "application/json"},
                                           body: JSON.stringify({prompt: $("prompt").value})});
  const body = await res.json();
  if (!res.ok) { fail(typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)); return; }
  chosen = new Set();
  $("topics").innerHTML = "";
  body.topics.forEach((words, k) => {
    const chip = document.createElement("span");
    chip.className = "chip";
    chip.dataset.k = k;
    chip.textContent = words.join(" ");
    chip.onclick = () => { chip.classList.toggle("on"); chip.classList.contains("on") ? chosen.add(k) : chosen.delete(k); };
    $("topics").appendChild(chip);
  });
  $("stats").textContent = `options in ${(body.options_s * 1000).toFixed(0)} ms`;
}

async function generate() {
  fail("");
  $("out").textContent = "";
  controller = new AbortController();
  $("stop").disabled = false; $("go").disabled = true; $("accept").disabled = true;
  const words = $("words").value.split(/\s+/).filter(Boolean);
  try {
    const res = await fetch("/api/generate", {method: "POST", signal: controller.signal,
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({prompt: $("prompt").value, topics: [...chosen], words})});
    if (!res.ok) { const b = await res.json(); fail(typeof b.detail === "string" ? b.detail : JSON.stringify(b.detail)); return; }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i); buf = buf.slice(i + 2);
        const ev = /^event: (\w+)/m.exec(block)?.[1];
        const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] || "{}");
        if (ev === "token") $("out").textContent += data.text;
        if (ev === "done") $("stats").textContent =
          `first token ${(data.first_token_s * 1000).toFixed(0)} ms, ${data.decode_tokens_per_s.toFixed(1)} tokens/s, ${data.tokens} tokens`;
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") fail(String(e)); else $("stats").textContent = "stopped";
  } finally {
    $("stop").disabled = true; $("go").disabled = false; $("accept").disabled = !$("out").textContent;
  }
}

$("suggest").onclick = suggest;
$("go").onclick = generate;
$("stop").onclick = () => controller && controller.abort();
$("accept").onclick = () => {
  history.push($("prompt").value);
  $("prompt").value = ($("prompt").value + $("out").textContent).trim();
  $("out").textContent = ""; $("accept").disabled = true; $("undo").disabled = false;
  suggest();
};
$("undo").onclick = () => { if (history.length) $("prompt").value = history.pop(); $("undo").disabled = !history.length; };
