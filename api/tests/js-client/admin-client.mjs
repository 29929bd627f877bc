// better-auth's official client, as an app uses it, against a running Gatehouse: signs in as
// an admin, then lists, bans, unbans and sets roles through `adminClient()`, and verifies a
// `/token` JWT against `/jwks` with `jose`. Prints one JSON object with what it saw.
//   node admin-client.mjs <server-url> <base-url> <admin-email> <admin-password> <victim-id>
// (<server-url> is where to connect; <base-url> the server's configured base URL: the browser
// origin the calls come from, and the tokens' issuer and audience.)
import { createAuthClient } from "better-auth/client";
import { adminClient } from "better-auth/client/plugins";
import { createRemoteJWKSet, jwtVerify } from "jose";

const [url, base, email, password, victimId] = process.argv.slice(2);
const origin = new URL(base).origin;

let cookie = "";
const keep = (res) => {
  const set = res.headers.getSetCookie?.() ?? [];
  if (set.length) cookie = set.map((c) => c.split(";")[0]).join("; ");
};
const client = createAuthClient({
  baseURL: url,
  plugins: [adminClient()],
  fetchOptions: {
    headers: { origin },
    onRequest: (ctx) => {
      if (cookie) ctx.headers.set("cookie", cookie);
    },
    onResponse: (ctx) => keep(ctx.response),
  },
});

const out = {};
const signIn = await client.signIn.email({ email, password });
out.signIn = { error: signIn.error, email: signIn.data?.user?.email };

const list = await client.admin.listUsers({ query: { limit: 10, sortBy: "email", sortDirection: "asc" } });
out.list = { error: list.error, total: list.data?.total, emails: list.data?.users?.map((u) => u.email) };

const ban = await client.admin.banUser({ userId: victimId, banReason: "client test", banExpiresIn: 3600 });
out.ban = { error: ban.error, banned: ban.data?.user?.banned, reason: ban.data?.user?.banReason };

const unban = await client.admin.unbanUser({ userId: victimId });
out.unban = { error: unban.error, banned: unban.data?.user?.banned };

const role = await client.admin.setRole({ userId: victimId, role: "admin" });
out.setRole = { error: role.error, role: role.data?.user?.role };

const denied = await client.admin.setRole({ userId: victimId, role: "wizard" });
out.denied = { status: denied.error?.status, code: denied.error?.code };

const token = await client.$fetch("/token", { method: "GET" });
const jwks = createRemoteJWKSet(new URL(`${url}/api/auth/jwks`));
const { payload, protectedHeader } = await jwtVerify(token.data.token, jwks, {
  issuer: base,
  audience: base,
});
out.jwt = { sub: payload.sub, email: payload.email, alg: protectedHeader.alg };
const forged = token.data.token.slice(0, -4) + (token.data.token.endsWith("AAAA") ? "BBBB" : "AAAA");
out.forged = await jwtVerify(forged, jwks, { issuer: base, audience: base }).then(
  () => "accepted",
  (e) => e.code,
);

console.log(JSON.stringify(out));
