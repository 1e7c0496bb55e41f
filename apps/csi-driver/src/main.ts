#!/usr/bin/env node
// Dynamic imports on purpose: in the bundle (scripts/bundle.mjs) they keep each module in a
// function of its own, compiled by V8 when it first runs. Static imports hoist every ES module
// into one top-level script that V8 parses in one piece, with ~9 MiB of parser memory that the
// process kept afterwards (the driver idled 7 MiB higher; issue 5).
const { productionDeps } = await import('./production.js');
const { runDriver } = await import('./program.js');

process.exitCode = await runDriver(process.argv.slice(2), await productionDeps());
