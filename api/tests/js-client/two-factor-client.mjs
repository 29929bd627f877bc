// better-auth's official client with `twoFactorClient()`, as an app uses it, against a running
// Gatehouse: signs up, turns two-factor sign-in on (enable, then a first TOTP code), signs
// out, signs in (the client's onTwoFactorRedirect fires), finishes with a code and reads the
// session. Prints one JSON object with what it saw.
//   node two-factor-client.mjs <server-url> <base-url> <email> <password>
import { createHmac } from "node:crypto";
import { twoFactorClient } from "better-auth/client/plugins";
import { browserClient } from "./client.mjs";

const [url, base, email, password] = process.argv.slice(2);
let redirected = 0;
const [client, jar] = browserClient(url, base, [
  twoFactorClient({
    onTwoFactorRedirect: () => {
      redirected += 1;
    },
  }),
]);

/** The code an authenticator app shows for a base32 `secret`, `offset` steps from now. */
function totp(secret, offset = 0) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of secret) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30000) + offset));
  const h = createHmac("sha1", key).update(counter).digest();
  const o = h[h.length - 1] & 15;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1000000).padStart(6, "0");
}

const out = {};
const up = await client.signUp.email({ email, password, name: "Two" });
out.signUp = { error: up.error, twoFactorEnabled: up.data?.user?.twoFactorEnabled };

const enable = await client.twoFactor.enable({ password });
const uri = enable.data?.totpURI ?? "";
const secret = new URL(uri).searchParams.get("secret") ?? "";
out.enable = { error: enable.error, uri: uri.split("?")[0], codes: enable.data?.backupCodes?.length };

const confirm = await client.twoFactor.verifyTotp({ code: totp(secret) });
out.confirm = { error: confirm.error, twoFactorEnabled: confirm.data?.user?.twoFactorEnabled };

await client.signOut();
const signIn = await client.signIn.email({ email, password });
out.signIn = { error: signIn.error, twoFactorRedirect: signIn.data?.twoFactorRedirect, methods: signIn.data?.twoFactorMethods, redirected };
const before = await client.getSession();
out.before = before.data;

// The next step's code: the one that confirmed the secret works once.
const verify = await client.twoFactor.verifyTotp({ code: totp(secret, 1), trustDevice: true });
out.verify = { error: verify.error, email: verify.data?.user?.email };
const session = await client.getSession();
out.session = { email: session.data?.user?.email, twoFactorEnabled: session.data?.user?.twoFactorEnabled };

// A wrong backup code, in a new challenge from another browser.
jar.clear();
await client.signIn.email({ email, password });
const wrong = await client.twoFactor.verifyBackupCode({ code: "aaaaa-bbbbb" });
out.wrongBackup = { status: wrong.error?.status, code: wrong.error?.code };

console.log(JSON.stringify(out));
