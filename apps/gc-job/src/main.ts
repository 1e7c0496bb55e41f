#!/usr/bin/env node
import { productionDeps } from './production.js';
import { runGc } from './program.js';

process.exitCode = await runGc(process.argv.slice(2), await productionDeps());
