// better-auth's official client with `twoFactorClient()`, as an app uses it, against a running
// Gatehouse: signs up, turns two-factor sign-in on (enable, then a first TOTP code), signs
// out, signs in (the client's onTwoFactorRedirect fires), finishes with a code and reads the
// session. Prints one JSON object with what it saw.
//   node two-factor-client.mjs <server-url> <base-url> <email> <password>
import { createHmac } from "node:crypto";
import { createAuthClient } from "better-auth/client";
import { twoFactorClient } from "better-auth/client/plugins";

const [url, base, email, password] = process.argv.slice(2);
const origin = new URL(base).origin;

// A cookie jar of one site: each Set-Cookie replaces its name; an empty value clears it.
const jar = new Map();
const keep = (res) => {
  for (const c of res.headers.getSetCookie?.() ?? []) {
    const [pair] = c.split(";");
    const at = pair.indexOf("=");
    const name = pair.slice(0, at);
    const value = pair.slice(at + 1);
    if (value === "" || /Max-Age=0/i.test(c)) jar.delete(name);
    else jar.set(name, value);
  }
};
let redirected = 0;
const client = createAuthClient({
  baseURL: url,
  plugins: [
    twoFactorClient({
      onTwoFactorRedirect: () => {
        redirected += 1;
      },
    }),
  ],
  fetchOptions: {
    headers: { origin },
    onRequest: (ctx) => {
      if (jar.size) ctx.headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    },
    onResponse: (ctx) => keep(ctx.response),
  },
});

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
