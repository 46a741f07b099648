// The index page: lists the attached agents, polled once a second.
"use strict";

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

async function refresh() {
  let agents;
  try {
    const response = await fetch("/api/agents");
    agents = await response.json();
  } catch (e) {
    return; // the server stopped; keep the last list
  }
  const body = document.getElementById("agents");
  if (agents.length === 0) return;
  body.replaceChildren(...agents.map((a) => {
    const tr = document.createElement("tr");
    const name = document.createElement("td");
    const link = document.createElement("a");
    link.href = "/agents/" + a.id;
    link.textContent = a.name;
    name.appendChild(link);
    tr.append(name, cell(a.machine, "muted"), cell(a.state, "badge-cell"), cell(String(a.hops)),
      cell(a.finished ? "finished" : a.approval ? "approval pending" : "running", a.approval ? "warn" : ""));
    return tr;
  }));
}

refresh();
setInterval(refresh, 1000);
