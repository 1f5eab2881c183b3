// pdemu serve through the official OpenAI Node SDK (issue 21 row 9).
//
// Run by served/node_test.go against a live server on loopback:
//   OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 PDEMU_MODEL=NAME node conformance.mjs
// Prints one JSON line per check, {"name", "ok", "detail"}, and exits 1 if
// any check failed (2 if the script itself broke). Each check is listed in
// docs/SERVE.md's conformance table.
import OpenAI from 'openai';

const baseURL = process.env.OPENAI_BASE_URL;
const model = process.env.PDEMU_MODEL;
if (!baseURL || !model) {
  console.error('set OPENAI_BASE_URL and PDEMU_MODEL');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
const user = [{ role: 'user', content: 'write something about disaggregated serving' }];

let failed = 0;
function report(name, ok, detail) {
  if (!ok) failed++;
  console.log(JSON.stringify({ name, ok, detail: String(detail ?? '') }));
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
async function check(name, fn) {
  try {
    const detail = await fn();
    report(name, true, detail);
  } catch (e) {
    report(name, false, e?.stack ?? e);
  }
}

// expectError runs fn, which must throw the SDK's error class cls with
// HTTP status, and vLLM's error body {error: {message, type, param, code}}
// naming param (when given) and code (when given).
async function expectError(fn, cls, status, param, code) {
  try {
    await fn();
  } catch (e) {
    assert(e instanceof cls, `want ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`);
    assert(e.status === status, `status ${e.status}, want ${status}`);
    assert(typeof e.error?.message === 'string' && e.error.message.length > 0, `no error.message: ${JSON.stringify(e.error)}`);
    // vLLM's ErrorInfo: type is the SDK's class name for the status
    // (BadRequestError, NotFoundError), code the status as an integer.
    assert(e.type === cls.name, `error.type ${e.type}, want ${cls.name}: ${JSON.stringify(e.error)}`);
    assert(e.error?.code === status, `error.code ${JSON.stringify(e.error?.code)}, want ${status}`);
    if (param !== undefined) assert(e.param === param, `param ${e.param}, want ${param}`);
    if (code !== undefined) assert(e.code === code, `code ${e.code}, want ${code}`);
    return `${e.status} ${e.type}/${e.code} param=${e.param}: ${e.error.message}`;
  }
  throw new Error('no error');
}

async function metric(name, label) {
  const res = await fetch(new URL('/metrics', baseURL));
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name + '{') && line.includes(label)) sum += Number(line.split(' ').pop());
  }
  return sum;
}

await check('models list and retrieve', async () => {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  assert(ids.length === 1 && ids[0] === model, `models ${ids}`);
  const m = await client.models.retrieve(model);
  assert(m.id === model && m.object === 'model', JSON.stringify(m));
  const detail = await expectError(() => client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404);
  return `${ids}; unknown: ${detail}`;
});

await check('chat completion', async () => {
  const { data: r, response } = await client.chat.completions
    .create({ model, messages: user, max_tokens: 5 }, { headers: { 'X-Request-Id': 'node-42' } })
    .withResponse();
  assert(r.object === 'chat.completion', r.object);
  assert(r.id === 'chatcmpl-node-42', `id ${r.id}`);
  assert(response.headers.get('x-request-id') === 'node-42', 'X-Request-Id not echoed');
  assert(Math.abs(r.created - Date.now() / 1000) < 120, `created ${r.created}`);
  const ch = r.choices[0];
  assert(ch.message.role === 'assistant' && ch.message.content.length > 0, JSON.stringify(ch));
  assert(ch.finish_reason === 'length', ch.finish_reason);
  assert(r.usage.completion_tokens === 5, JSON.stringify(r.usage));
  assert(r.usage.total_tokens === r.usage.prompt_tokens + 5, JSON.stringify(r.usage));
  return JSON.stringify(r.usage);
});

await check('chat stream with usage', async () => {
  const stream = await client.chat.completions.create({
    model, messages: user, max_tokens: 8, stream: true, stream_options: { include_usage: true },
  });
  let tokens = 0, finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    assert(chunk.object === 'chat.completion.chunk', chunk.object);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.role) role = c.delta.role;
      if (c.delta?.content) tokens++;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert(tokens === 8, `${tokens} content chunks`);
  assert(role === 'assistant', `role ${role}`);
  assert(finish === 'length', `finish ${finish}`);
  assert(usage?.completion_tokens === 8, `usage ${JSON.stringify(usage)}`);
  return `8 chunks, usage ${JSON.stringify(usage)}`;
});

await check('chat stream without usage', async () => {
  const stream = await client.chat.completions.create({ model, messages: user, max_tokens: 3, stream: true });
  let usage = null, tokens = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) if (c.delta?.content) tokens++;
  }
  assert(tokens === 3 && usage === null, `${tokens} tokens, usage ${JSON.stringify(usage)}`);
  return 'no usage chunk';
});

await check('completions', async () => {
  const r = await client.completions.create({ model, prompt: 'once upon a time', max_tokens: 4, logprobs: 2 });
  assert(r.object === 'text_completion', r.object);
  assert(r.id.startsWith('cmpl-'), r.id);
  assert(r.choices[0].text.length > 0, JSON.stringify(r.choices));
  assert(r.usage.completion_tokens === 4, JSON.stringify(r.usage));
  assert(r.choices[0].logprobs.tokens.length === 4, JSON.stringify(r.choices[0].logprobs));
  assert(Object.keys(r.choices[0].logprobs.top_logprobs[0]).length === 2, 'top_logprobs');
  const stream = await client.completions.create({ model, prompt: 'once upon a time', max_tokens: 6, stream: true });
  let text = '', finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert(text.length > 0 && finish === 'length', `text ${JSON.stringify(text)}, finish ${finish}`);
  return `non-streamed ${JSON.stringify(r.choices[0].text)}; streamed ${JSON.stringify(text)}`;
});

await check('max_completion_tokens', async () => {
  const r = await client.chat.completions.create({ model, messages: user, max_completion_tokens: 7 });
  assert(r.usage.completion_tokens === 7, JSON.stringify(r.usage));
  const detail = await expectError(
    () => client.chat.completions.create({ model, messages: user, max_completion_tokens: 0 }),
    OpenAI.BadRequestError, 400, 'max_completion_tokens');
  return `7 tokens; 0: ${detail}`;
});

await check('stop', async () => {
  const r = await client.chat.completions.create({ model, messages: user, max_tokens: 200, stop: [' the'] });
  const ch = r.choices[0];
  assert(ch.finish_reason === 'stop', ch.finish_reason);
  assert(!ch.message.content.includes(' the'), ch.message.content);
  assert(r.usage.completion_tokens < 200, JSON.stringify(r.usage));
  return `stopped after ${r.usage.completion_tokens} tokens`;
});

await check('logprobs', async () => {
  const r = await client.chat.completions.create({ model, messages: user, max_tokens: 6, logprobs: true, top_logprobs: 3 });
  const lp = r.choices[0].logprobs.content;
  assert(lp.length === 6, `${lp.length} logprobs`);
  for (const t of lp) {
    assert(t.logprob <= 0, `logprob ${t.logprob}`);
    assert(t.top_logprobs.length === 3 && t.top_logprobs[0].token === t.token, JSON.stringify(t));
    for (let k = 1; k < 3; k++) assert(t.top_logprobs[k].logprob < t.top_logprobs[k - 1].logprob, 'not decreasing');
  }
  assert(lp.map((t) => t.token).join('') === r.choices[0].message.content, 'tokens are the text');
  const detail = await expectError(
    () => client.chat.completions.create({ model, messages: user, logprobs: true, top_logprobs: 21 }),
    OpenAI.BadRequestError, 400, 'top_logprobs');
  return `6 tokens; top_logprobs 21: ${detail}`;
});

await check('n > 1', async () => {
  const r = await client.chat.completions.create({ model, messages: user, max_tokens: 5, n: 3 });
  assert(r.choices.length === 3, `${r.choices.length} choices`);
  r.choices.forEach((c, i) => assert(c.index === i, `index ${c.index}`));
  assert(r.usage.completion_tokens === 15, JSON.stringify(r.usage));
  const detail = await expectError(
    () => client.chat.completions.create({ model, messages: user, max_tokens: 5, n: 17 }),
    OpenAI.BadRequestError, 400, 'n');
  return `3 choices; n=17: ${detail}`;
});

await check('tools refused', async () => {
  return await expectError(
    () => client.chat.completions.create({
      model, messages: user,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
    }),
    OpenAI.BadRequestError, 400, 'tools', 400);
});

await check('ranges and roles validated', async () => {
  const a = await expectError(() => client.chat.completions.create({ model, messages: user, temperature: -3 }),
    OpenAI.BadRequestError, 400, 'temperature');
  const b = await expectError(() => client.chat.completions.create({ model, messages: user, top_p: 7 }),
    OpenAI.BadRequestError, 400, 'top_p');
  const c = await expectError(() => client.chat.completions.create({ model, messages: [{ role: 'wizard', content: 'hi' }] }),
    OpenAI.BadRequestError, 400, 'messages[0].role');
  // In range, sampling parameters are documented no-ops.
  const r = await client.chat.completions.create({ model, messages: user, max_tokens: 2, temperature: 0.7, top_p: 0.9, seed: 1 });
  assert(r.usage.completion_tokens === 2, JSON.stringify(r.usage));
  return [a, b, c].join(' | ');
});

await check('unknown model', async () => {
  return await expectError(() => client.chat.completions.create({ model: 'gpt-4o', messages: user }),
    OpenAI.NotFoundError, 404, 'model', 404);
});

await check('context length', async () => {
  return await expectError(() => client.chat.completions.create({ model, messages: user, max_tokens: 10_000_000 }),
    OpenAI.BadRequestError, 400, undefined, 400);
});

await check('stream helper', async () => {
  // The SDK's higher-level helper assembles the streamed chunks.
  const runner = client.chat.completions.stream({ model, messages: user, max_tokens: 6 });
  let deltas = 0;
  runner.on('content', () => deltas++);
  const final = await runner.finalChatCompletion();
  const content = final.choices[0].message.content;
  assert(deltas === 6, `${deltas} content events`);
  assert(content.length > 0 && final.choices[0].finish_reason === 'length', JSON.stringify(final.choices[0]));
  return `final ${JSON.stringify(content)}`;
});

await check('n > 1 streamed', async () => {
  const stream = await client.chat.completions.create({ model, messages: user, max_tokens: 4, n: 2, stream: true });
  const per = [0, 0], finished = [false, false];
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.delta?.content) per[c.index]++;
      if (c.finish_reason) finished[c.index] = true;
    }
  }
  assert(per[0] === 4 && per[1] === 4 && finished[0] && finished[1], `per choice ${per}, finished ${finished}`);
  return `per choice ${per}`;
});

await check('request ids', async () => {
  // Generated ids differ; an error carries the response's X-Request-Id.
  const a = await client.chat.completions.create({ model, messages: user, max_tokens: 1 });
  const b = await client.chat.completions.create({ model, messages: user, max_tokens: 1 });
  assert(a.id !== b.id && a.id.startsWith('chatcmpl-'), `${a.id} ${b.id}`);
  try {
    await client.chat.completions.create({ model, messages: user, temperature: 9 }, { headers: { 'X-Request-Id': 'node-err' } });
  } catch (e) {
    assert(e.requestID === 'node-err', `requestID ${e.requestID}`);
    return `${a.id}, ${b.id}; error requestID ${e.requestID}`;
  }
  throw new Error('temperature 9 was accepted');
});

await check('unsupported endpoint', async () => {
  return await expectError(() => client.embeddings.create({ model, input: 'embed me' }), OpenAI.NotFoundError, 404);
});

await check('abort by AbortController', async () => {
  const before = await metric('vllm:request_success_total', 'finished_reason="abort"');
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model, messages: [{ role: 'user', content: 'a long answer, please' }], max_tokens: 2000, stream: true },
    { signal: controller.signal });
  let tokens = 0, aborted = false;
  try {
    for await (const chunk of stream) {
      for (const c of chunk.choices) if (c.delta?.content) tokens++;
      if (tokens >= 1) controller.abort();
    }
  } catch (e) {
    assert(e instanceof OpenAI.APIUserAbortError || e?.name === 'AbortError', `${e?.constructor?.name}: ${e?.message}`);
    aborted = true;
  }
  assert(aborted || tokens < 2000, `the stream ran to its end (${tokens} tokens)`);
  // The emulated request leaves the cluster: the server counts an abort.
  const deadline = Date.now() + 20_000;
  let after = before;
  while (Date.now() < deadline && after <= before) {
    await new Promise((r) => setTimeout(r, 100));
    after = await metric('vllm:request_success_total', 'finished_reason="abort"');
  }
  assert(after === before + 1, `abort count ${before} -> ${after}`);
  return `aborted after ${tokens} token(s); server aborts ${before} -> ${after}`;
});

process.exit(failed > 0 ? 1 : 0);
