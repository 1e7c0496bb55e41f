#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';

// Before anything allocates: V8's memory-for-speed trade (heap limits grow by less, so a
// burst of calls is collected by a full GC early instead of growing old space to 60+ MiB
// of garbage) and a young generation that keeps the size it starts with (16 MiB semi-spaces
// otherwise). After 12 rounds of 1,000 calls RSS stayed at 72-79 MiB instead of climbing
// to 129 MiB (bench/README.md, footprint). Both flags are read at each GC, so setting them here takes effect.
setFlagsFromString('--optimize-for-size --semi-space-growth-factor=1');

// Dynamic imports on purpose: in the bundle (scripts/bundle.mjs) they keep each module in a
// function of its own, compiled by V8 when it first runs. Static imports hoist every ES module
// into one top-level script that V8 parses in one piece, with ~9 MiB of parser memory that the
// process kept afterwards (the driver idled 7 MiB higher, measured by bench/).
const { productionDeps } = await import('./production.js');
const { runDriver } = await import('./program.js');

process.exitCode = await runDriver(process.argv.slice(2), await productionDeps());
