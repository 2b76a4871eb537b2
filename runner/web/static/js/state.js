// What the page holds while it is open, shared by its modules: the agents, the open thread, the
// run in progress and what is drawn for it. One object, so every module reads the same truth.

export const $ = (id) => document.getElementById(id);

export const S = {
  agents: [], // rows of /web/api/agents
  dev: false,
  agent: null, // graph id (= assistant id) of the open thread or the selected agent
  thread: null,
  head: null, // the open thread as its header shows it (the API's thread)
  running: false,
  values: {}, // the open thread's state values
  calls: new Map(), // tool call id -> {card, result, nested, name, args}
  texts: new Map(), // AI message id -> its text element
  subagents: new Map(), // namespace root ("tools:<id>") -> element holding that subagent's work
  steps: new Map(), // workflow step id -> {row, status, nested}
  changed: new Set(), // agent paths written by the thread
  live: { calls: 0, input: 0, output: 0 }, // replies seen during this page's runs (subagents too)
  usage: null, // the open thread's totals from /web/api/threads/{id}/usage
  schemas: new Map(), // agent -> {tool: JSON schema}
  decisions: new Map(), // interrupt id -> array of decisions (one per action request)
  interrupts: [],
  inputs: {}, // agent -> {input name: what its field holds} (kept while the page is open)
  inputsShown: null, // what the input form was drawn for
  viewing: null, // path shown in the file viewer
};

/** The line at the top right that says what the page is doing. */
export function status(text) {
  $("status").textContent = text;
}

/** The selected agent's row of /web/api/agents. */
export function currentAgent() {
  return S.agents.find((a) => a.name === S.agent);
}
