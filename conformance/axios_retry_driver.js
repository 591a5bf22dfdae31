// axios-retry 4.x (dist/cjs/index.js) on axios 1.x: GET requests, each worker with its own
// axios instance. The same interface as the Python drivers (common.py): prints
// `version <axios-retry version>`, reads the server's URL from standard input, runs operations
// from --workers concurrent loops until --seconds have passed, each attempt carrying
// `X-Op-Id: c<client>-w<worker>-<n>`. Node's Math.random cannot be seeded: --seed is accepted
// and ignored.
//
// defaults: axiosRetry(instance): retries 3, retryDelay noDelay (the Retry-After or 0),
//           retryCondition isNetworkOrIdempotentRequestError (the preset `axios-retry`).
// tuned:    { retries: 3, retryDelay: exponentialDelay }: max(2^n * 100 ms, Retry-After)
//           * U(1, 1.2), n = 1 for the first retry.
// *.axios-retry.json: a file `retrysim export axios-retry` wrote, its built-ins' names turned
//           into the library's functions (docs/config-files.md), the rest passed as it is.
'use strict';
const fs = require('fs');
const axios = require('axios');
const library = require('axios-retry');
const axiosRetry = library.default;
const { exponentialDelay } = library;

const CONFIGS = {
  defaults: {},
  tuned: { retries: 3, retryDelay: exponentialDelay },
};

// The options of an exported file: `retryDelay` ("noDelay" or { name, delayFactor }) and
// `retryCondition` (a name) become the library's own functions.
function exported(path) {
  const options = JSON.parse(fs.readFileSync(path, 'utf8'));
  const delay = typeof options.retryDelay === 'string' ? { name: options.retryDelay } : options.retryDelay;
  if (delay) {
    const factor = delay.delayFactor;
    const delays = {
      noDelay: library.DEFAULT_OPTIONS.retryDelay,
      linearDelay: () => library.linearDelay(factor),
      exponentialDelay: () => (n, error) => exponentialDelay(n, error, factor),
    };
    if (!(delay.name in delays)) throw new Error(`${path}: unknown retryDelay ${delay.name}`);
    options.retryDelay = delay.name === 'noDelay' ? delays.noDelay : delays[delay.name]();
  }
  if (options.retryCondition !== undefined) {
    const condition = library[options.retryCondition];
    if (typeof condition !== 'function') throw new Error(`${path}: unknown retryCondition ${options.retryCondition}`);
    options.retryCondition = condition;
  }
  return options;
}

function args() {
  const out = { workers: 8, seconds: 3.1, ops: 0 };
  const argv = process.argv.slice(2);
  out.config = argv.shift();
  if (out.config in CONFIGS) {
    out.options = CONFIGS[out.config];
  } else if (out.config && out.config.endsWith('.axios-retry.json')) {
    out.options = exported(out.config);
  } else {
    console.error(`usage: axios_retry_driver.js {${Object.keys(CONFIGS).join(',')},FILE.axios-retry.json} [--workers N] [--seconds S] [--ops N]`);
    process.exit(2);
  }
  while (argv.length) {
    const flag = argv.shift();
    const value = Number(argv.shift());
    if (flag === '--workers') out.workers = value;
    else if (flag === '--seconds') out.seconds = value;
    else if (flag === '--ops') out.ops = value;
    else if (flag !== '--seed') {
      console.error(`unknown flag ${flag}`);
      process.exit(2);
    }
  }
  return out;
}

async function readUrl() {
  let text = '';
  for await (const chunk of process.stdin) {
    text += chunk;
    if (text.includes('\n')) break;
  }
  return text.trim();
}

async function main() {
  const a = args();
  console.log(`version ${require('axios-retry/package.json').version}`);
  const url = await readUrl();
  const start = Date.now();
  let total = 0;
  const worker = async (w) => {
    const client = axios.create({ baseURL: url });
    axiosRetry(client, a.options);
    for (let n = 0; (a.ops === 0 || n < a.ops) && Date.now() - start < a.seconds * 1000; n++) {
      try {
        await client.get('/op', { headers: { 'X-Op-Id': `c${w}-w${w}-${n}` } });
      } catch (_) {
        // the library gave up: the server's log says how
      }
      total++;
    }
  };
  await Promise.all(Array.from({ length: a.workers }, (_, w) => worker(w)));
  console.log(`done ${total} operations`);
  process.exit(0);
}

main();
