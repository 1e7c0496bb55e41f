// kubectl-relay.mjs HOST PORT KUBECTL LOG [HELM]: on the host, in the tier's network namespace
// (control-plane.sh), runs the test VM's kubectl (and, with HELM, helm) commands natively against
// the control plane.
//
// Why: a kubectl started in the emulated VM costs 5-20 s (a large Go binary starting under TCG,
// then API discovery); the same command on the host costs well under a second. vm/bin/kubectl (the
// `kubectl` first on the VM's PATH) sends each command here and prints what it printed.
//
// Protocol (HTTP/1.1, one command per POST /): header `x-program` = `kubectl` (also when absent)
// or `helm` (vm/bin/helm; only when HELM was given); header `x-args` = base64 of the arguments, each
// followed by a NUL byte; body = the command's stdin (empty for none). Answer: body = its stdout;
// headers `x-exit` = its exit code (or 128 + the signal number), `x-stderr` = base64 of its
// stderr (the last 32 KiB). Commands run concurrently, each with KUBECONFIG of the environment.
// The listener is the namespace's side of the VM's tap device: the VM and its pods reach it, and
// it runs kubectl as root with the admin credentials (a test cluster's, thrown away at the end).
// A command whose caller went away (a timeout in the VM) is killed.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { constants } from 'node:os';

const [host, port, kubectl, logFile, helm] = process.argv.slice(2);
if (!host || !port || !kubectl || !logFile) {
  console.error('usage: kubectl-relay.mjs HOST PORT KUBECTL LOG [HELM]');
  process.exit(2);
}
/** The programs the VM may run here, by the name vm/bin sends. */
const PROGRAMS = { kubectl, ...(helm ? { helm } : {}) };
const STDERR_MAX = 32 * 1024;
const log = (line) => appendFileSync(logFile, `${new Date().toISOString()} ${line}\n`);

// the arguments travel in a header: allow far more than Node's default 16 KiB
const server = createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
  const started = Date.now();
  const args = Buffer.from(String(req.headers['x-args'] ?? ''), 'base64')
    .toString('utf8')
    .split('\0')
    .slice(0, -1);
  const stdin = [];
  req.on('data', (chunk) => stdin.push(chunk));
  req.on('end', () => {
    const name = String(req.headers['x-program'] ?? 'kubectl');
    const program = Object.hasOwn(PROGRAMS, name) ? PROGRAMS[name] : undefined;
    if (program === undefined) {
      res.writeHead(200, {
        'x-exit': '127',
        'x-stderr': Buffer.from(`kubectl-relay: no program ${name} here\n`).toString('base64'),
      });
      res.end();
      log(`exit 127: no program ${name}`);
      return;
    }
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    let err = Buffer.alloc(0);
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => {
      err = Buffer.concat([err, chunk]).subarray(-STDERR_MAX);
    });
    child.stdin.on('error', () => {}); // a command that exits before reading its stdin
    child.stdin.end(Buffer.concat(stdin));
    let answered = false;
    const answer = (exit) => {
      if (answered) return;
      answered = true;
      res.writeHead(200, { 'x-exit': String(exit), 'x-stderr': err.toString('base64') });
      res.end(Buffer.concat(out));
      log(`exit ${exit} ${Date.now() - started} ms: ${name} ${args.join(' ')}`);
    };
    child.on('error', (e) => {
      err = Buffer.from(`kubectl-relay: cannot run ${program}: ${e.message}\n`);
      answer(127);
    });
    child.on('close', (code, signal) => answer(code ?? 128 + (constants.signals[signal] ?? 0)));
    res.on('close', () => {
      if (!answered) child.kill();
    });
  });
});
server.requestTimeout = 0; // no limit on a request's arrival (a large `kubectl apply -f -`)
server.listen(Number(port), host, () =>
  log(`listening on ${host}:${port}, kubectl ${kubectl}${helm ? `, helm ${helm}` : ''}`),
);
