// The index page: lists the attached agents, polled once a second, and
// says when the list shown is no longer kept up (the inspector stopped,
// or another one on its port refuses the page).
"use strict";

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

async function refresh() {
  let agents;
  const status = document.getElementById("status");
  try {
    const response = await fetch("/api/agents");
    if (!response.ok) {
      // Another inspector on this port now, with a token of its own.
      status.textContent = "refused: open the inspector's URL again";
      status.className = "status warn";
      return;
    }
    agents = await response.json();
  } catch (e) {
    // The server stopped: the last list is kept, and said to be old.
    status.textContent = "disconnected, retrying";
    status.className = "status warn";
    return;
  }
  status.textContent = "";
  status.className = "status";
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
