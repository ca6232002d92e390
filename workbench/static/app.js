// The workbench page: vanilla JS, no build step, every request to this server only.
// The token arrives once in the URL; it is moved to sessionStorage and taken out of the
// address bar at once, and sent only in the Authorization header.
"use strict";
(function () {
  const KEY = "vivary-token";
  const STATIC = window.VIVARY_STATIC || null; // a static export (`vivary serve --export-demo`)
  const view = document.getElementById("view");
  const notice = document.getElementById("notice");
  const conn = document.getElementById("conn");
  const state = { demo: false, route: [], runsOffset: 0, eventsOffset: 0, stream: null, retry: null };

  function takeToken() {
    const params = new URLSearchParams(location.search);
    const given = params.get("token");
    if (given) {
      sessionStorage.setItem(KEY, given);
      params.delete("token");
      const rest = params.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
    }
  }
  const token = () => sessionStorage.getItem(KEY) || "";

  // --- DOM built node by node: no text from the data is ever parsed as HTML
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  const badge = (s) => el("span", { class: "badge " + String(s || "") }, s || "—");
  const text = (v) => (v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v));
  function table(heads, rows) {
    return el("table", {}, el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.length ? rows : [el("tr", {}, el("td", { colspan: heads.length, class: "muted" }, "none"))]));
  }
  function show(...nodes) {
    const label = state.demo ? [el("strong", { class: "demo demo-label" }, "DEMO DATA")] : [];
    view.replaceChildren(...label, ...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  }
  function say(message, kind, extra) {
    notice.className = kind || "";
    notice.replaceChildren(message, ...(extra || []));
    notice.hidden = false;
  }
  const unsay = () => { notice.hidden = true; notice.replaceChildren(); };
  function setConn(s, label) { conn.dataset.state = s; conn.textContent = label; }

  // --- the API
  class ApiError extends Error {
    constructor(status, body) { super(body && body.error ? body.error : "HTTP " + status); this.status = status; this.body = body; }
  }
  async function api(path, init) {
    if (STATIC) {
      const key = path.split("?")[0];
      if (!(key in STATIC)) throw new ApiError(404, { error: "not in this static export" });
      return STATIC[key];
    }
    const headers = { Authorization: "Bearer " + token() };
    const opts = { headers, cache: "no-store" };
    if (init && init.body !== undefined) {
      opts.method = "POST";
      headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(init.body);
    }
    const res = await fetch(path, opts);
    const body = await res.json().catch(() => null);
    if (res.status === 401) askToken();
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }

  function askToken() {
    const input = el("input", { type: "text", placeholder: "http://127.0.0.1:PORT/?token=…", "aria-label": "workbench URL" });
    const use = el("button", { type: "button", onclick: () => {
      const raw = input.value.trim();
      let t = raw;
      try { t = new URL(raw).searchParams.get("token") || raw; } catch (_) { /* a bare token */ }
      sessionStorage.setItem(KEY, t);
      unsay();
      connect();
      render();
    } }, "Use");
    say("This page's token is not accepted (the server prints a new one each time it starts). Paste the URL `vivary serve` printed:", "", [input, use]);
  }

  // --- live updates: server-sent events read with fetch (so the token stays in a header)
  async function connect() {
    if (STATIC) { setConn("static", "static export"); return; }
    if (state.stream) state.stream.abort();
    const ctl = new AbortController();
    state.stream = ctl;
    let res;
    try {
      res = await fetch("/api/events", { headers: { Authorization: "Bearer " + token() }, signal: ctl.signal, cache: "no-store" });
    } catch (_) { if (!ctl.signal.aborted) lost(); return; }
    if (res.status === 401) { setConn("disconnected", "token refused"); askToken(); return; }
    if (!res.ok) { lost(); return; }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          onEvent(block);
        }
      }
    } catch (_) { /* the connection broke */ }
    if (!ctl.signal.aborted) lost();
  }
  function onEvent(block) {
    let kind = "message", data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) kind = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    if (!data) return;
    const payload = JSON.parse(data);
    if (kind === "hello") {
      const was = conn.dataset.state;
      setConn("live", "live");
      if (was === "disconnected") { say("Reconnected to the workbench server.", "info"); render(); }
    } else if (kind === "runs") {
      const moved = Object.keys(payload.moved).concat(payload.gone);
      const [tab, id] = state.route;
      if (tab === "runs" && (!id || moved.includes(id))) render();
    }
  }
  function lost() {
    setConn("disconnected", "disconnected");
    say("Disconnected: the workbench server stopped or cannot be reached. Retrying…");
    clearTimeout(state.retry);
    state.retry = setTimeout(probe, 1000);
  }
  async function probe() {
    try {
      const res = await fetch("/api/health", { cache: "no-store" });
      if (res.ok) { connect(); return; }
    } catch (_) { /* still down */ }
    state.retry = setTimeout(probe, 1000);
  }

  // --- views
  function pager(info, onMove) {
    const { total, offset, limit } = info;
    const shown = total ? `${offset + 1}–${Math.min(total, offset + limit)} of ${total}` : "0";
    return el("div", { class: "pager" },
      el("button", { type: "button", disabled: offset <= 0, onclick: () => onMove(Math.max(0, offset - limit)) }, "‹ newer"),
      el("span", {}, shown),
      el("button", { type: "button", disabled: offset + limit >= total, onclick: () => onMove(offset + limit) }, "older ›"));
  }
  // every time on the page is UTC in the runs' own ISO 8601 form (run.json's `at`, `createdAt`)
  const utc = (seconds) => new Date(seconds * 1000).toISOString();
  const spent = (s) => Object.entries(s || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "—";

  async function runsView() {
    const data = await api(`/api/runs?offset=${state.runsOffset}&limit=50`);
    const rows = data.runs.map((r) => el("tr", { "data-run": r.runId },
      el("td", { class: "mono" }, el("a", { href: "#/runs/" + encodeURIComponent(r.runId) }, r.runId)),
      el("td", {}, r.flow), el("td", {}, badge(r.status)),
      el("td", {}, r.gates.length ? r.gates.map((g) => el("span", { class: "badge waiting_gate" }, "gate " + g.stepId)) : "—"),
      el("td", {}, r.ready.map((x) => x.id).join(", ") || "—"),
      el("td", {}, spent(r.flowSpent)),
      el("td", { class: "muted" }, r.movedAt ? utc(r.movedAt) : text(r.createdAt))));
    show(el("h2", {}, "Runs"),
      pager(data, (o) => { state.runsOffset = o; render(); }),
      table(["run", "flow", "status", "waiting", "ready", "spent", "last moved"], rows));
  }

  function gateBox(run, g) {
    const note = el("textarea", { placeholder: "note (kept in the run's history)", "aria-label": "note for " + g.stepId });
    const result = el("div", { class: "muted" });
    const decide = async (decision, btn) => {
      for (const b of box.querySelectorAll("button")) b.disabled = true;
      try {
        await api(`/api/runs/${encodeURIComponent(run.runId)}/gates/${g.stepId.split("/").map(encodeURIComponent).join("/")}`,
          { body: { decision, gateToken: g.gateToken, note: note.value } });
        result.textContent = `${decision} recorded as your decision`;
        render();
      } catch (err) {
        result.textContent = err.status === 409 ? "Stale: the gate moved on before your decision; reloaded." : String(err.message);
        if (err.status === 409) render();
        else for (const b of box.querySelectorAll("button")) b.disabled = false;
      }
      btn.blur();
    };
    const button = (d, label) => el("button", { type: "button", class: d, "data-decision": d, onclick: (e) => decide(d, e.target) }, label);
    // what the gate is asked about: the output of each step it comes after
    const subject = Object.entries(g.subject || {}).map(([step, output]) => el("div", { class: "subject", "data-subject": step },
      el("span", { class: "muted" }, `output of ${step}:`), el("pre", {}, output === null ? "none" : JSON.stringify(output, null, 2))));
    const box = el("div", { class: "gate", "data-gate": g.stepId },
      el("strong", {}, `Gate ${g.stepId} is waiting for a decision`), el("span", { class: "muted" }, ` (round ${g.round})`),
      subject, note, el("div", {}, button("approve", "Approve"), " ", button("revise", "Revise"), " ", button("kill", "Kill")), result);
    if (state.demo || STATIC) for (const b of box.querySelectorAll("button")) b.disabled = true;
    return box;
  }

  function attemptRows(step) {
    return step.attempts.map((a) => el("tr", {},
      el("td", {}, a.attempt), el("td", {}, badge(a.outcome)), el("td", {}, text(a.reason)),
      el("td", {}, text(a.resolution)), el("td", {}, a.resolvedBy ? `${a.decision || ""} by ${a.resolvedBy}` : "—"),
      el("td", {}, context(a.context)), el("td", {}, spent(a.usage)), el("td", { class: "muted" }, text(a.at))));
  }
  // the estimated tokens of every context load the dispatch was given
  const context = (c) => (c && c.loads ? `${c.tokens} (${c.loads.map((l) => `${l.kind} ${l.tokens}`).join(", ")})` : "—");

  // `evalId`: a run of an eval's scratch repository (read only: its gates are not this workspace's)
  async function runView(id, evalId) {
    const base = evalId ? `/api/evals/${encodeURIComponent(evalId)}/runs/` : "/api/runs/";
    const crumb = evalId ? [el("a", { href: "#/evals" }, "Evals"), " / ", el("a", { href: "#/evals/" + encodeURIComponent(evalId) }, evalId)]
      : [el("a", { href: "#/runs" }, "Runs")];
    let run;
    try {
      run = await api(`${base}${encodeURIComponent(id)}?offset=${state.eventsOffset}&limit=100`);
    } catch (err) {
      if (!evalId || !(err instanceof ApiError)) throw err;
      // the workbench cannot open this eval's run: say so, and give the command that can
      const e = await api("/api/evals/" + encodeURIComponent(evalId)).catch(() => null);
      const row = e ? e.rows.find((r) => r.runId === id) : null;
      show(el("h2", {}, crumb, " / ", el("span", { class: "mono" }, id)), el("p", { class: "unavailable" }, String(err.message)),
        row && row.audit ? el("p", { "data-audit": "" }, "At a terminal: ", el("code", {}, row.audit)) : null);
      return;
    }
    const steps = run.steps.map((s) => [el("h3", {}, `${s.id} `, badge(s.status), el("span", { class: "muted" }, ` epoch ${s.epoch}, spent ${spent(s.spent)}`)),
      s.attempts.length ? table(["#", "outcome", "reason", "resolution", "decided", "context tokens", "usage", "at"], attemptRows(s)) : el("p", { class: "muted" }, "no attempts yet")]);
    const events = run.events.items.map((e) => el("tr", {},
      el("td", { class: "muted" }, e.at), el("td", {}, e.type), el("td", { class: "mono" }, text(e.stepId)), el("td", { class: "mono" }, text(e.detail))));
    const judged = run.judged.map((e) => el("tr", {}, el("td", {}, e.type), el("td", { class: "mono" }, text(e.stepId)), el("td", { class: "mono" }, text(e.detail))));
    show(el("h2", {}, crumb, " / ", el("span", { class: "mono" }, run.runId), " ", badge(run.status)),
      el("p", { class: "muted" }, `flow ${run.flow} · head ${run.head.slice(0, 12)} · spent ${spent(run.usage.flow)}`),
      evalId ? null : run.gates.map((g) => gateBox(run, g)),
      run.failure ? el("pre", {}, "failure: " + text(run.failure)) : null,
      run.output !== undefined ? el("div", {}, el("h3", {}, "Output"), el("pre", {}, JSON.stringify(run.output, null, 2))) : null,
      el("h3", {}, "Steps and attempts"), steps,
      el("h3", {}, "Judged and skipped checks"), table(["event", "step", "detail"], judged),
      el("h3", {}, `Events (${run.events.total})`),
      pager(run.events, (o) => { state.eventsOffset = o; render(); }),
      table(["at", "event", "step", "detail"], events));
  }

  async function boardView() {
    const b = await api("/api/board");
    show(el("h2", {}, "Board"), b.available ? null : el("p", { class: "unavailable" }, b.reason),
      table(["item", "status", "held by"], b.items.map((i) => el("tr", {}, el("td", { class: "mono" }, i.id), el("td", {}, badge(i.status)), el("td", {}, i.assignee ? "@" + i.assignee : "—")))),
      el("h3", {}, "Claims"),
      table(["item", "claim refs"], b.claims.map((c) => el("tr", {}, el("td", { class: "mono" }, c.id), el("td", { class: "mono" }, c.refs.join(", "))))));
  }

  async function guardView() {
    const g = await api("/api/guard");
    const base = el("input", { name: "base", value: "refs/heads/main", "aria-label": "base" });
    const head = el("input", { name: "head", value: "HEAD", "aria-label": "head" });
    const out = el("div", {});
    const review = async (ev) => {
      ev.preventDefault();
      try {
        const r = await api(`/api/guard/review?base=${encodeURIComponent(base.value)}&head=${encodeURIComponent(head.value)}`);
        out.replaceChildren(el("p", {}, "review ", badge(r.ok ? "ok" : "failed"), ` ${r.entries.length} new entries`),
          table(["resource", "line", "kind", "transition", "signer", "status"], r.entries.map((e) => el("tr", {},
            el("td", { class: "mono" }, e.resource_id), el("td", {}, e.line), el("td", {}, e.kind),
            el("td", {}, `${text(e.from_state)} → ${text(e.to_state)}`), el("td", {}, text(e.signer)), el("td", {}, e.status)))),
          r.verify.breaks.map((b) => el("pre", {}, "break: " + b.message)));
      } catch (err) { out.replaceChildren(el("p", { class: "unavailable" }, String(err.message))); }
    };
    show(el("h2", {}, "Guard"),
      el("p", {}, "ledgers ", badge(g.verify.ok ? "ok" : "failed"), ` ${g.resources.length} resource(s), ${g.verify.entries} entries`),
      g.verify.breaks.map((b) => el("pre", {}, "break: " + b.message)),
      g.resources.map((r) => [el("h3", {}, el("span", { class: "mono" }, r.id), " ", badge(r.state)),
        table(["line", "kind", "outcome", "transition", "signer", "rationale"], r.entries.map((e) => el("tr", {},
          el("td", {}, e.line), el("td", {}, e.kind), el("td", {}, text(e.outcome)), el("td", {}, `${text(e.from_state)} → ${text(e.to_state)}`),
          el("td", {}, text(e.signer)), el("td", {}, text(e.rationale)))))]),
      el("h3", {}, "Review a branch"),
      el("form", { class: "inline", onsubmit: review }, "base", base, "head", head, el("button", { type: "submit" }, "Review")), out);
  }

  async function heartbeatView() {
    const h = await api("/api/heartbeat");
    const act = async (pid, decision) => {
      try { await api(`/api/heartbeat/${encodeURIComponent(pid)}`, { body: { decision } }); unsay(); }
      catch (err) { say(String(err.message)); }
      render();
    };
    const rows = h.proposals.map((p) => el("tr", { "data-proposal": p.id },
      el("td", { class: "mono" }, p.id), el("td", {}, p.kind), el("td", {}, p.title), el("td", {}, badge(p.status)),
      el("td", {}, (p.files || []).join(", ") || "—"),
      el("td", {}, p.status === "open" && !state.demo && !STATIC
        ? [el("button", { type: "button", class: "approve", onclick: () => act(p.id, "accept") }, "Accept"), " ",
           el("button", { type: "button", class: "kill", onclick: () => act(p.id, "reject") }, "Reject")] : "—")));
    show(el("h2", {}, "Heartbeat proposals"),
      el("p", { class: "muted" }, `last heartbeat at ${h.last_head ? h.last_head.slice(0, 12) : "never"}; accept writes the proposal on a branch heartbeat/<id>`),
      table(["id", "kind", "title", "status", "files", "decide"], rows));
  }

  async function lanesView() {
    const l = await api("/api/lanes");
    if (!l.available) { show(el("h2", {}, "Lanes"), el("p", { class: "unavailable" }, "Not available: " + l.reason)); return; }
    const pct = (r) => (typeof r === "number" ? `${Math.round(r * 1000) / 10}%` : text(r));
    const r = l.rule || {};
    const rule = r.trustAfter !== undefined
      ? `Every output is verified until a lane has ${r.trustAfter} clean verifications; then ${r.decay}, never below ${pct(r.floor)}. A failure, an override or a change of spec or agent resets it.`
      : text(l.rule);
    show(el("h2", {}, "Lanes"), el("p", { class: "muted" }, rule),
      table(["flow", "step", "agent", "clean streak", "verification rate", "verified", "skipped", "failures", "last reset"],
        l.lanes.map((x) => el("tr", { "data-lane": x.lane || "" },
          el("td", {}, text(x.flow)), el("td", {}, text(x.step)), el("td", {}, text(x.agent)), el("td", {}, text(x.clean)),
          el("td", {}, pct(x.rate)), el("td", {}, text(x.verified)), el("td", {}, text(x.skipped)),
          el("td", {}, text(x.failures)), el("td", {}, text(x.lastReset))))));
  }

  async function graphView() {
    const g = await api("/api/graph");
    // `tropo view`'s own page, in a sandboxed frame: its scripts run (allowed by hash), but
    // in an opaque origin with no access to this page, its token or the API.
    const frame = el("iframe", { class: "graph", sandbox: "allow-scripts", title: "workspace graph" });
    frame.srcdoc = g.html;
    show(el("h2", {}, "Graph"), frame);
  }

  // --- evals: runs of `strato eval`, a run's results, two runs compared (all read only)
  const pct1 = (r) => (typeof r === "number" ? `${(r * 100).toFixed(1)}%` : text(r));
  const signed = (r) => (typeof r === "number" ? `${r >= 0 ? "+" : ""}${(r * 100).toFixed(1)}%` : text(r));
  const num = (v, d) => (typeof v === "number" ? v.toFixed(d) : text(v));
  const evalHref = (id) => "#/evals/" + encodeURIComponent(id);

  async function evalsView() {
    const data = await api("/api/evals");
    const good = data.evals.filter((e) => !e.problem);
    const rows = data.evals.map((e) => el("tr", { "data-eval": e.id },
      el("td", { class: "mono" }, el("a", { href: evalHref(e.id) }, e.id)),
      e.problem ? el("td", { colspan: 7, class: "unavailable" }, e.problem) : [
        el("td", {}, text(e.set)), el("td", {}, text(e.flow)), el("td", {}, text(e.agent)),
        el("td", {}, e.lanes ? "on" : "off"), el("td", {}, text(e.repeat)),
        el("td", {}, `${pct1(e.successRate)} (${text(e.results)}/${text(e.expected)})`),
        el("td", {}, num(e.tokensPerTask, 0))],
      el("td", { class: "muted" }, e.movedAt ? utc(e.movedAt) : "—")));
    const pick = (name, at) => el("select", { name, "aria-label": name },
      good.map((e, i) => el("option", { value: e.id, selected: i === at }, e.id)));
    const a = pick("a", 1), b = pick("b", 0);  // the list is newest first: by default, older -> newer
    const go = (ev) => { ev.preventDefault(); location.hash = `#/compare/${encodeURIComponent(a.value)}/${encodeURIComponent(b.value)}`; };
    show(el("h2", {}, "Evals"),
      el("p", { class: "muted" }, "Each row is one strato eval run, kept on refs/vivary/evals/<id> (docs/evals.md)."),
      table(["eval", "task set", "flow", "agent", "lanes", "repeat", "success rate", "tokens / task", "last result"], rows),
      good.length >= 2 ? [el("h3", {}, "Compare two runs"),
        el("form", { class: "inline", onsubmit: go }, "A", a, "B", b, el("button", { type: "submit" }, "Compare"))] : null);
  }

  async function evalView(id) {
    const e = await api("/api/evals/" + encodeURIComponent(id));
    const where = e.scratch.present
      ? `Its runs are in the scratch repository ${e.scratch.path}; each run below opens here.`
      : `Its runs are not in this clone (the eval ran elsewhere, in that clone's ${e.scratch.path}); run the command shown there.`;
    const rows = e.rows.map((r) => el("tr", { "data-task": r.task, "data-trial": r.trial },
      el("td", { class: "mono" }, text(r.task)), el("td", {}, text(r.trial)), el("td", {}, text(r.score)),
      el("td", {}, badge(r.outcome)), el("td", {}, text(r.reason)), el("td", {}, text(r.attempts)),
      el("td", {}, text(r.verifierCalls)), el("td", {}, text(r.tokens)), el("td", {}, text(r.wallMs)),
      el("td", {}, r.audit && e.scratch.present
        ? el("a", { class: "mono", href: `${evalHref(id)}/runs/${encodeURIComponent(r.runId)}`, title: r.audit }, r.runId)
        : el("code", {}, text(r.audit)))));
    show(el("h2", {}, el("a", { href: "#/evals" }, "Evals"), " / ", el("span", { class: "mono" }, e.id)),
      el("p", { class: "muted" }, `task set ${e.set} · flow ${e.flow} · agent ${e.agent} · lanes ${e.lanes ? "on" : "off"} · repeat ${e.repeat} · ${e.ref}`),
      el("p", {}, `success rate ${pct1(e.successRate)} over ${e.results}/${e.expected} results · per task: ${num(e.tokensPerTask, 0)} tokens, ${num(e.attemptsPerTask, 2)} attempts, ${num(e.verifierCallsPerTask, 2)} verifier calls, ${num(e.wallMsPerTask, 0)} ms`),
      el("p", { class: "muted", "data-scratch": e.scratch.present ? "here" : "elsewhere" }, where),
      table(["task", "trial", "score", "outcome", "reason", "attempts", "verifier calls", "tokens", "ms", "run (its attempts)"], rows));
  }

  async function compareView(a, b) {
    const c = await api(`/api/evals/${encodeURIComponent(a)}/compare/${encodeURIComponent(b)}`);
    const d = c.difference;
    const side = (s) => el("tr", {}, el("td", { class: "mono" }, el("a", { href: evalHref(s.id) }, s.id)),
      el("td", {}, text(s.flow)), el("td", {}, text(s.agent)), el("td", {}, s.lanes ? "on" : "off"),
      el("td", {}, pct1(s.successRate)), el("td", {}, num(s.tokensPerTask, 0)), el("td", {}, num(s.wallMsPerTask, 0)),
      el("td", {}, num(s.attemptsPerTask, 2)), el("td", {}, num(s.verifierCallsPerTask, 2)));
    const flipped = c.flipped.map((f) => el("tr", { "data-flipped": f.task },
      el("td", { class: "mono" }, text(f.task)), el("td", {}, num(f.a, 2)), el("td", {}, num(f.b, 2)), el("td", {}, badge("to " + f.to))));
    show(el("h2", {}, el("a", { href: "#/evals" }, "Evals"), " / compare"),
      table(["", "flow", "agent", "lanes", "success rate", "tokens / task", "ms / task", "attempts / task", "verifier calls / task"],
        [side(c.a), side(c.b)]),
      el("p", { class: "difference" }, `B − A success rate ${signed(d.successRate)}, ${Math.round(d.level * 100)}% CI ${signed(d.ci[0])} .. ${signed(d.ci[1])} `,
        el("span", { class: "muted" }, `(bootstrap, ${d.resamples} resamples of ${c.pairedTasks} paired tasks, seed ${d.seed})`)),
      el("h3", {}, `Flipped tasks (${c.flipped.length})`),
      table(["task", "A mean score", "B mean score", "flipped"], flipped));
  }

  const VIEWS = { runs: runsView, board: boardView, guard: guardView, heartbeat: heartbeatView, lanes: lanesView, graph: graphView, evals: evalsView };

  async function render() {
    const [tab, id] = state.route;
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.tab === (tab === "compare" ? "evals" : tab));
    try {
      if (tab === "runs" && id) await runView(id);
      else if (tab === "evals" && id) {
        const [evalId, sub, runId] = id.split("/");
        if (sub === "runs" && runId) await runView(runId, evalId); else await evalView(evalId);
      } else if (tab === "compare") await compareView(...id.split("/"));
      else await (VIEWS[tab] || runsView)();
    } catch (err) {
      if (err instanceof ApiError) show(el("p", { class: "unavailable" }, String(err.message)));
      else if (err instanceof TypeError) lost();
      else throw err;
    }
  }
  function route() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    const next = [parts[0] || "runs", parts.slice(1).join("/") || ""];
    if (next[1] !== state.route[1]) state.eventsOffset = 0;
    state.route = next;
    render();
  }

  async function start() {
    takeToken();
    window.addEventListener("hashchange", route);
    try {
      const s = await api("/api/session");
      state.demo = Boolean(s.demo);
      document.getElementById("demo-banner").hidden = !state.demo;
    } catch (err) {
      if (!(err instanceof ApiError)) { lost(); return; }  // the stream's hello renders once it is back
    }
    route();
    connect();
  }
  start();
})();
