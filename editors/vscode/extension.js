// The agentctl extension: a thin client that starts `agentctl lsp` (stdio) for the workspace's
// YAML files. Everything it shows (diagnostics, completion, hover, definitions, symbols, quick
// fixes) comes from the server, so it is what `agentctl validate` reports.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function serverOptions(config) {
  const command = config.get("command") || ["agentctl", "lsp"];
  return {
    command: command[0],
    args: command.slice(1),
    transport: TransportKind.stdio,
  };
}

async function start(context) {
  const config = vscode.workspace.getConfiguration("agentctl");
  const patterns = config.get("files") || ["**/*.yaml", "**/*.yml"];
  const clientOptions = {
    documentSelector: patterns.map((pattern) => ({ scheme: "file", language: "yaml", pattern })),
    initializationOptions: { debounce: config.get("debounce") },
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher("**/*.{yaml,yml,md,py}"),
    },
  };
  client = new LanguageClient("agentctl", "agentctl", serverOptions(config), clientOptions);
  await client.start();
  context.subscriptions.push(client);
}

async function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("agentctl") && client) {
        await client.stop();
        await start(context);
      }
    }),
  );
  try {
    await start(context);
  } catch (error) {
    vscode.window.showErrorMessage(
      `agentctl: could not start \`agentctl lsp\` (${error.message}). Install agentctl with the ` +
        "`lsp` extra (pip install 'agentctl[lsp]') or set `agentctl.command`.",
    );
  }
}

async function deactivate() {
  if (client) {
    await client.stop();
  }
}

module.exports = { activate, deactivate };
