#!/usr/bin/env node
import { cliWarnings, productionDeps } from './production.js';
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2), await productionDeps());
cliWarnings.summary();
