#!/usr/bin/env node
import { productionDeps } from './production.js';
import { runDriver } from './program.js';

process.exitCode = await runDriver(process.argv.slice(2), await productionDeps());
