// better-auth's official client with `passkeyClient()`, as an app uses it, against a running
// Gatehouse: signs in with a password, lists the account's passkeys, renames one, deletes it
// and lists again (adding a passkey needs a browser's authenticator: the Rust test registers
// it first, and the Chromium end-to-end test goes through the browser). Prints one JSON
// object with what it saw.
//   node passkey-client.mjs <server-url> <base-url> <email> <password>
import { passkeyClient } from "@better-auth/passkey/client";
import { browserClient } from "./client.mjs";

const [url, base, email, password] = process.argv.slice(2);
const [client] = browserClient(url, base, [passkeyClient()]);

const out = {};
const signIn = await client.signIn.email({ email, password });
out.signIn = { error: signIn.error };
const list = await client.passkey.listUserPasskeys();
out.list = {
  error: list.error,
  names: list.data?.map((p) => p.name),
  fields: list.data?.[0] ? Object.keys(list.data[0]).sort() : [],
};
const id = list.data?.[0]?.id;
const renamed = await client.passkey.updatePasskey({ id, name: "Renamed by the client" });
out.rename = { error: renamed.error, name: renamed.data?.passkey?.name };
const unknown = await client.passkey.deletePasskey({ id: "no-such-passkey" });
out.unknown = { code: unknown.error?.code, status: unknown.error?.status };
const deleted = await client.passkey.deletePasskey({ id });
out.delete = { error: deleted.error, status: deleted.data?.status };
const after = await client.passkey.listUserPasskeys();
out.after = after.data?.length;
console.log(JSON.stringify(out));
