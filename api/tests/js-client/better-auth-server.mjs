// better-auth 1.7 itself, on loopback, configured like Gatehouse's defaults (email and
// password, the organization plugin with teams and custom roles, the admin and jwt plugins), on
// its in-memory adapter:
// the side-by-side compatibility test (tests/it/compat.rs) asks it and Gatehouse the same
// questions and compares the answers. Written from better-auth's documented options.
//
//   node better-auth-server.mjs        → prints "listening on 127.0.0.1:<port>" when ready
import http from "node:http";
import { betterAuth } from "better-auth";
import { toNodeHandler } from "better-auth/node";
import { memoryAdapter } from "better-auth/adapters/memory";
import { organization, admin, jwt } from "better-auth/plugins";
import { defaultAc, defaultRoles } from "better-auth/plugins/organization/access";

// Every model's rows (the adapter clones this object, so a plain one).
const tables = Object.fromEntries(
  ["user", "session", "account", "verification", "organization", "member", "invitation",
   "team", "teamMember", "organizationRole", "jwks"].map((t) => [t, []]),
);
// Mail is recorded, never sent: GET /__mail?to=<address> answers the links sent there.
// POST /__set-role {email, role} makes a user an administrator (the test's `gatehouse user
// set-role`).
const mail = [];
const remember = (kind, to, url) => mail.push({ kind, to: String(to).toLowerCase(), url });

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
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
      jwt(),
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
