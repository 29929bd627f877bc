// better-auth 1.7 itself, on loopback, configured like Gatehouse's defaults (email and
// password, the organization plugin with teams and custom roles, the admin and jwt plugins), on
// its in-memory adapter:
// the side-by-side compatibility test (tests/it/compat.rs) asks it and Gatehouse the same
// questions and compares the answers. Written from better-auth's documented options.
//
//   node better-auth-server.mjs        → prints "listening on 127.0.0.1:<port>" when ready
//   PORT=3300 JWT_PLUGIN=0 node better-auth-server.mjs
//                                      → on that port, without the jwt plugin (get-session then
//                                        signs no JWT): the benchmark's side by side (bench/README)
import http from "node:http";
import { betterAuth } from "better-auth";
import { toNodeHandler } from "better-auth/node";
import { memoryAdapter } from "better-auth/adapters/memory";
import { organization, admin, jwt, twoFactor, emailOTP, magicLink } from "better-auth/plugins";
import { defaultAc, defaultRoles } from "better-auth/plugins/organization/access";
import { passkey } from "@better-auth/passkey";
import { apiKey } from "@better-auth/api-key";

// Every model's rows (the adapter clones this object, so a plain one).
const tables = Object.fromEntries(
  ["user", "session", "account", "verification", "organization", "member", "invitation",
   "team", "teamMember", "organizationRole", "jwks", "twoFactor", "passkey"].map((t) => [t, []]),
);
// Mail is recorded, never sent: GET /__mail?to=<address> answers the links sent there.
// POST /__set-role {email, role} makes a user an administrator (the test's `gatehouse user
// set-role`). /__github/... is the fake GitHub below, for Gatehouse.
const mail = [];
const remember = (kind, to, url) => mail.push({ kind, to: String(to).toLowerCase(), url });

// A fake GitHub with one user, answering as GitHub documents its OAuth app endpoints: the code
// `good` is exchanged for tokens (any other code: HTTP 200 with an `error`, as GitHub does), a
// refresh token for new ones, `/user` and `/user/emails` for a bearer token it issued. Asked by
// better-auth (its fetch of github.com is answered here) and by Gatehouse over HTTP
// (`/__github/...`), so both servers see the same provider.
const issued = new Set();
const fakeGithub = (method, path, params, authorization) => {
  const token = () => {
    const t = `gho_${Math.random().toString(36).slice(2)}${Date.now()}`;
    issued.add(t);
    return {
      access_token: t, token_type: "bearer", scope: "read:user,user:email",
      expires_in: 28800, refresh_token: `ghr_${t}`, refresh_token_expires_in: 15811200,
    };
  };
  if (method === "POST" && path === "/login/oauth/access_token") {
    if (params.get("grant_type") === "refresh_token") {
      return params.get("refresh_token")?.startsWith("ghr_") ? [200, token()]
        : [200, { error: "bad_refresh_token", error_description: "The refresh token passed is incorrect or expired." }];
    }
    return params.get("code") === "good" ? [200, token()]
      : [200, { error: "bad_verification_code", error_description: "The code passed is incorrect or expired." }];
  }
  const bearer = (authorization || "").replace(/^(Bearer|token) /i, "");
  if (!issued.has(bearer)) return [401, { message: "Bad credentials" }];
  if (method === "GET" && path === "/user") {
    return [200, { login: "octo", id: 4242, name: "Octo Cat", email: null, avatar_url: "https://avatars.example/u/4242" }];
  }
  if (method === "GET" && path === "/user/emails") {
    return [200, [{ email: "gh@compat.io", primary: true, verified: true, visibility: "public" }]];
  }
  return [404, { message: "Not Found" }];
};
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (url.hostname !== "github.com" && url.hostname !== "api.github.com") return realFetch(input, init);
  const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
  const body = init.body === undefined ? "" : String(init.body);
  const params = headers.get("content-type")?.includes("json")
    ? new URLSearchParams(Object.entries(JSON.parse(body || "{}")))
    : new URLSearchParams(body);
  const [status, json] = fakeGithub(init.method || "GET", url.pathname, params, headers.get("authorization"));
  return new Response(JSON.stringify(json), { status, headers: { "content-type": "application/json" } });
};

const server = http.createServer();
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  const { port } = server.address();
  const base = `http://localhost:${port}`;
  const auth = betterAuth({
    appName: "Compat",
    baseURL: base,
    basePath: "/api/auth",
    secret: "compat-test-secret-0123456789abcdefghijklmnopqrstuvwxyz",
    database: memoryAdapter(tables),
    telemetry: { enabled: false },
    rateLimit: { enabled: false },
    socialProviders: {
      github: { clientId: "compat-github", clientSecret: "compat-github-secret" },
    },
    emailAndPassword: {
      enabled: true,
      sendResetPassword: async ({ user, url }) => remember("reset-password", user.email, url),
    },
    emailVerification: {
      sendVerificationEmail: async ({ user, url }) => remember("verify-email", user.email, url),
    },
    user: {
      changeEmail: {
        enabled: true,
        sendChangeEmailConfirmation: async ({ user, url }) =>
          remember("change-email-confirmation", user.email, url),
      },
      deleteUser: {
        enabled: true,
        sendDeleteAccountVerification: async ({ user, url }) =>
          remember("delete-account", user.email, url),
      },
    },
    plugins: [
      organization({
        teams: { enabled: true },
        // Custom roles per organization over the default statements and roles.
        ac: defaultAc,
        roles: defaultRoles,
        dynamicAccessControl: { enabled: true },
        sendInvitationEmail: async ({ email, id }) => remember("invitation", email, id),
      }),
      admin(),
      ...(process.env.JWT_PLUGIN === "0" ? [] : [jwt()]),
      // Codes by mail: kept as a mail of kind "two-factor-otp" whose url is the code.
      twoFactor({ otpOptions: { sendOTP: async ({ user, otp }) => remember("two-factor-otp", user.email, otp) } }),
      // Codes and links by mail: a code is kept as a mail of kind "email-otp" whose url is it.
      emailOTP({ sendVerificationOTP: async ({ email, otp }) => remember("email-otp", email, otp) }),
      magicLink({ sendMagicLink: async ({ email, url }) => remember("magic-link", email, url) }),
      // The relying party of the base URL (its host, its origin), as Gatehouse derives it.
      passkey({ rpID: new URL(base).hostname, rpName: "Gatehouse", origin: new URL(base).origin }),
      // Keys in x-api-key act as their user (as Gatehouse's do).
      apiKey({ enableSessionForAPIKeys: true }),
    ],
  });
  const handle = toNodeHandler(auth);
  server.on("request", (req, res) => {
    const url = new URL(req.url, base);
    if (url.pathname === "/__mail") {
      const to = (url.searchParams.get("to") || "").toLowerCase();
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(mail.filter((m) => m.to === to)));
      return;
    }
    if (url.pathname.startsWith("/__github/")) {
      let body = "";
      req.on("data", (c) => { body += c; });
      req.on("end", () => {
        const [status, json] = fakeGithub(
          req.method, url.pathname.slice("/__github".length), new URLSearchParams(body),
          req.headers.authorization,
        );
        res.statusCode = status;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(json));
      });
      return;
    }
    if (url.pathname === "/__set-role" && req.method === "POST") {
      // Makes a user an administrator out of band (as `gatehouse user set-role` does).
      let body = "";
      req.on("data", (c) => { body += c; });
      req.on("end", async () => {
        const { email, role } = JSON.parse(body);
        const ctx = await auth.$context;
        const user = await ctx.internalAdapter.findUserByEmail(email);
        if (!user) {
          res.statusCode = 404;
          res.end("{}");
          return;
        }
        await ctx.internalAdapter.updateUser(user.user.id, { role });
        res.setHeader("content-type", "application/json");
        res.end("{}");
      });
      return;
    }
    handle(req, res);
  });
  console.log(`listening on 127.0.0.1:${port}`);
});
