// better-auth's official client with `apiKeyClient()`, as an app uses it, against a running
// Gatehouse: signs up, makes a key, lists it, renames it, reads it, calls the server with the
// key alone (as a script does), and deletes it. Prints one JSON object with what it saw.
//   node api-key-client.mjs <server-url> <base-url> <email> <password>
import { apiKeyClient } from "@better-auth/api-key/client";
import { browserClient } from "./client.mjs";

const [url, base, email, password] = process.argv.slice(2);
const [client] = browserClient(url, base, [apiKeyClient()]);

const out = {};
const up = await client.signUp.email({ email, password, name: "Key Maker" });
out.signUp = up.error ?? up.data?.user?.email;
const made = await client.apiKey.create({ name: "deploy", prefix: "gh_", expiresIn: 60 * 60 * 24 * 7 });
out.create = { error: made.error, name: made.data?.name, start: made.data?.start, prefixed: made.data?.key?.startsWith("gh_") };
const key = made.data?.key;
const id = made.data?.id;
const list = await client.apiKey.list();
out.list = { error: list.error, total: list.data?.total, names: list.data?.apiKeys?.map((k) => k.name), holdsKey: JSON.stringify(list.data ?? {}).includes(key) };
const renamed = await client.apiKey.update({ keyId: id, name: "deploy-2" });
out.update = { error: renamed.error, name: renamed.data?.name };
const got = await client.apiKey.get({ query: { id } });
out.get = { error: got.error, name: got.data?.name, enabled: got.data?.enabled };
const refused = await client.apiKey.create({ remaining: 3 });
out.refused = refused.error?.code ?? null;
// A script: no cookie, the key in x-api-key.
const res = await fetch(`${url}/api/auth/get-session`, { headers: { "x-api-key": key } });
out.script = { status: res.status, email: (await res.json())?.user?.email ?? null };
const gone = await client.apiKey.delete({ keyId: id });
out.delete = { error: gone.error, data: gone.data };
const after = await fetch(`${url}/api/auth/get-session`, { headers: { "x-api-key": key } });
out.after = { status: after.status, code: (await after.json())?.code ?? null };
console.log(JSON.stringify(out));
