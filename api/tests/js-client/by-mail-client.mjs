// better-auth's official client with `emailOTPClient()` and `magicLinkClient()`, as an app uses
// them, against a running Gatehouse whose mail goes to an outbox folder: signs up and in by a
// code, resets the password by a code, verifies an address by a code, and signs in by a link.
// Prints one JSON object with what it saw.
//   node by-mail-client.mjs <server-url> <base-url> <outbox-dir> <email> <password>
import fs from "node:fs";
import path from "node:path";
import { emailOTPClient, magicLinkClient } from "better-auth/client/plugins";
import { browserClient } from "./client.mjs";

const [url, base, outbox, email, password] = process.argv.slice(2);
const [client] = browserClient(url, base, [emailOTPClient(), magicLinkClient()]);

const mails = (kind) =>
  (fs.existsSync(outbox) ? fs.readdirSync(outbox) : [])
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(outbox, f), "utf8")))
    .filter((m) => m.kind === kind && m.to === email);

/** The next mail of `kind` after the `seen` ones (mail leaves after the answer). */
async function next(kind, seen) {
  for (let i = 0; i < 200; i++) {
    const all = mails(kind);
    if (all.length > seen) return all[seen];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${kind} mail`);
}
const codeOf = (m) => m.subject.split(" ")[0];

const out = {};
let seen = mails("email-otp").length;
const sent = await client.emailOtp.sendVerificationOtp({ email, type: "sign-in" });
out.send = { error: sent.error, data: sent.data };
let code = codeOf(await next("email-otp", seen++));
const signIn = await client.signIn.emailOtp({ email, otp: code });
out.signIn = { error: signIn.error, email: signIn.data?.user?.email, verified: signIn.data?.user?.emailVerified, token: typeof signIn.data?.token };
out.session = (await client.getSession()).data?.user?.email ?? null;
const again = await client.signIn.emailOtp({ email, otp: code });
out.again = again.error?.code ?? null;

await client.signOut();
await client.emailOtp.requestPasswordReset({ email });
code = codeOf(await next("email-otp", seen++));
const check = await client.emailOtp.checkVerificationOtp({ email, type: "forget-password", otp: code });
out.check = { error: check.error, data: check.data };
const reset = await client.emailOtp.resetPassword({ email, otp: code, password });
out.reset = { error: reset.error, data: reset.data };
const withPassword = await client.signIn.email({ email, password });
out.withPassword = { error: withPassword.error, email: withPassword.data?.user?.email };

await client.emailOtp.sendVerificationOtp({ email, type: "email-verification" });
code = codeOf(await next("email-otp", seen++));
const verified = await client.emailOtp.verifyEmail({ email, otp: code });
out.verify = { error: verified.error, status: verified.data?.status, verified: verified.data?.user?.emailVerified };

await client.signOut();
const links = mails("magic-link").length;
const asked = await client.signIn.magicLink({ email, callbackURL: "/dashboard" });
out.magicLink = { error: asked.error, data: asked.data };
const link = new URL((await next("magic-link", links)).link);
out.linkPath = link.pathname;
out.linkCallback = link.searchParams.get("callbackURL");
const followed = await client.magicLink.verify({ query: { token: link.searchParams.get("token") } });
out.followed = { error: followed.error, email: followed.data?.user?.email, session: typeof followed.data?.session?.token };
out.after = (await client.getSession()).data?.user?.email ?? null;

console.log(JSON.stringify(out));
