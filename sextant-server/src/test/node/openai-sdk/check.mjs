// The official OpenAI Node SDK against a Sextant gateway, unchanged but for its base URL. Run by OpenAiNodeSdkTest:
// node check.mjs http://127.0.0.1:PORT MODEL. Prints one JSON object of what each call returned (the test asserts
// on it); a call that throws unexpectedly ends the script with exit status 1 and the error on stderr.
import OpenAI from 'openai';

const [base, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 });
const out = {};

const { data: chat, response } = await client.chat.completions
  .create({ model, messages: [{ role: 'user', content: 'hello' }], max_completion_tokens: 4, prompt_cache_key: 'node-1' })
  .withResponse();
out.chat = {
  content: chat.choices[0].message.content,
  finish_reason: chat.choices[0].finish_reason,
  completion_tokens: chat.usage?.completion_tokens,
  engine: response.headers.get('x-sextant-engine'),
};

const stream = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'hello' }], max_completion_tokens: 5, stream: true,
});
const pieces = [];
let finish = null;
for await (const chunk of stream) {
  const choice = chunk.choices[0];
  if (choice?.delta?.content) pieces.push(choice.delta.content);
  if (choice?.finish_reason) finish = choice.finish_reason;
}
out.stream = { pieces: pieces.length, finish_reason: finish };

const { data: resp, response: respHttp } = await client.responses
  .create({ model, instructions: 'be brief', input: 'hello', max_output_tokens: 4, prompt_cache_key: 'node-r' })
  .withResponse();
out.response = {
  status: resp.status,
  output_text: resp.output_text, // the SDK's own join of the output_text parts
  output_tokens: resp.usage?.output_tokens,
  engine: respHttp.headers.get('x-sextant-engine'),
};

const events = await client.responses.create({ model, input: 'hello', max_output_tokens: 5, stream: true });
const deltas = [];
let last = null;
for await (const event of events) {
  if (event.type === 'response.output_text.delta') deltas.push(event.delta);
  last = event;
}
const finalText = last?.response?.output?.[0]?.content?.[0]?.text;
out.response_stream = { deltas: deltas.length, last: last?.type, text_matches: finalText === deltas.join('') };

const completion = await client.completions.create({ model, prompt: 'hello', max_tokens: 3, n: 2 });
out.completion = {
  text: completion.choices[0].text,
  finish_reason: completion.choices[0].finish_reason,
  choices: completion.choices.map((c) => c.index),
};

// the SDK's default asks for base64 and decodes it; 'float' asks for the numbers as JSON
const embedding = await client.embeddings.create({ model, input: 'hello' });
const floats = await client.embeddings.create({ model, input: 'hello', encoding_format: 'float' });
out.embedding = { values: embedding.data[0].embedding, floats: floats.data[0].embedding };

const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;
out.retrieved = (await client.models.retrieve(model)).id;

try {
  await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
  out.unknown_model = { thrown: null };
} catch (e) {
  out.unknown_model = { thrown: e.constructor.name, status: e.status, not_found: e instanceof OpenAI.NotFoundError,
    message: e.error?.message ?? e.message };
}

console.log(JSON.stringify(out));
