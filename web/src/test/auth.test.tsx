import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { Account } from "../pages/account";
import { SignIn, SignUp, TwoFactorPage, VerifyEmail } from "../pages/auth";
import { ForgotPassword, ResetPassword } from "../pages/password";
import { deferred, mockServer, renderAt, session, user } from "./helpers";

beforeEach(() => {
  vi.unstubAllGlobals();
});

const signInRoutes = [
  { path: "/sign-in", element: <SignIn /> },
  { path: "/account", element: <p>account page</p> },
  { path: "/organizations/:id", element: <p>org page</p> },
];

it("sign-in: checks the fields before sending anything", async () => {
  const { sent } = mockServer({ "GET /social-providers": () => ({ body: [] }) });
  renderAt("/sign-in", signInRoutes);
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(screen.getByText("Enter your email address.")).toBeInTheDocument();
  expect(screen.getByText("Enter your password.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Email"), "not-an-email");
  expect(screen.getByText("That email address does not look right.")).toBeInTheDocument();
  expect(sent.filter((s) => s.method === "POST")).toEqual([]);
});

it("sign-in: pending, then the server's refusal as a sentence", async () => {
  const gate = deferred();
  mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => gate.reply,
  });
  renderAt("/sign-in", signInRoutes);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "wrong-password");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  const pending = await screen.findByRole("button", { name: "Please wait…" });
  expect(pending).toBeDisabled();
  gate.release({ status: 401, body: { code: "INVALID_EMAIL_OR_PASSWORD", message: "Invalid email or password" } });
  expect(await screen.findByRole("alert")).toHaveTextContent("The email or the password is wrong.");
  expect(screen.getByRole("button", { name: "Sign in" })).toBeEnabled();
});

it("sign-in: sends remember-me and goes to a local redirectTo only", async () => {
  let signedIn = false;
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => {
      signedIn = true;
      return { body: { redirect: false, token: "t", url: null, user } };
    },
    "GET /get-session": () => ({ body: signedIn ? session : null }),
  });
  renderAt("/sign-in?redirectTo=%2Forganizations%2Fo1&email=ann%40example.com", signInRoutes);
  expect(screen.getByLabelText("Email")).toHaveValue("ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "correct-horse");
  await userEvent.click(screen.getByLabelText("Remember me"));
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByText("org page")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/sign-in/email")?.body).toEqual({ email: "ann@example.com", password: "correct-horse", rememberMe: false });
});

it("sign-in: an unverified address offers to resend the link", async () => {
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => ({ status: 403, body: { code: "EMAIL_NOT_VERIFIED", message: "Email not verified" } }),
    "POST /send-verification-email": () => ({ body: { status: true } }),
  });
  renderAt("/sign-in", signInRoutes);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "whatever-1");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  await userEvent.click(await screen.findByRole("button", { name: "Send the verification link again" }));
  expect(await screen.findByText(/We sent a new verification link/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/send-verification-email")?.body).toEqual({ email: "ann@example.com", callbackURL: "/verify-email" });
});

it("sign-in: shows the configured providers and starts their flow", async () => {
  const assign = vi.fn();
  vi.stubGlobal("location", { ...window.location, assign, origin: window.location.origin });
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [{ id: "github", name: "GitHub" }] }),
    "POST /sign-in/social": () => ({ body: { redirect: true, url: "https://github.example/authorize?x=1" } }),
  });
  renderAt("/sign-in", signInRoutes);
  await userEvent.click(await screen.findByRole("button", { name: "Continue with GitHub" }));
  await waitFor(() => expect(assign).toHaveBeenCalledWith("https://github.example/authorize?x=1"));
  expect(sent.find((s) => s.path === "/sign-in/social")?.body).toMatchObject({ provider: "github", errorCallbackURL: "/error", disableRedirect: true });
});

it("password fields toggle between hidden and shown", async () => {
  mockServer({ "GET /social-providers": () => ({ body: [] }) });
  renderAt("/sign-in", signInRoutes);
  const input = screen.getByLabelText("Password");
  expect(input).toHaveAttribute("type", "password");
  expect(input).toHaveAttribute("autocomplete", "current-password");
  await userEvent.click(screen.getByRole("button", { name: "Show password" }));
  expect(input).toHaveAttribute("type", "text");
  await userEvent.click(screen.getByRole("button", { name: "Hide password" }));
  expect(input).toHaveAttribute("type", "password");
});

it("sign-up: validates, then reports a taken address", async () => {
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-up/email": () => ({ status: 422, body: { code: "USER_ALREADY_EXISTS", message: "User already exists" } }),
  });
  renderAt("/sign-up", [{ path: "/sign-up", element: <SignUp /> }]);
  await userEvent.click(screen.getByRole("button", { name: "Create account" }));
  expect(screen.getByText("Enter your name.")).toBeInTheDocument();
  expect(screen.getByText("Use at least 8 characters.")).toBeInTheDocument();
  expect(sent.some((s) => s.method === "POST")).toBe(false);
  expect(screen.getByLabelText("Password")).toHaveAttribute("autocomplete", "new-password");
  await userEvent.type(screen.getByLabelText("Name"), "Ann");
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "long-enough-1");
  await userEvent.click(screen.getByRole("button", { name: "Create account" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("An account with this email already exists. Sign in instead.");
});

it("sign-up: without a session (verification first) says to check the inbox", async () => {
  mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-up/email": () => ({ body: { token: null, user: { ...user, emailVerified: false } } }),
  });
  renderAt("/sign-up", [{ path: "/sign-up", element: <SignUp /> }]);
  await userEvent.type(screen.getByLabelText("Name"), "Ann");
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "long-enough-1");
  await userEvent.click(screen.getByRole("button", { name: "Create account" }));
  expect(await screen.findByText(/Check your inbox/)).toBeInTheDocument();
});

it("forgot password: asks for a link back to the reset page", async () => {
  const { sent } = mockServer({
    "POST /request-password-reset": () => ({ body: { status: true, message: "If this email exists in our system, check your email for the reset link" } }),
  });
  renderAt("/forgot-password", [{ path: "/forgot-password", element: <ForgotPassword /> }]);
  await userEvent.click(screen.getByRole("button", { name: "Send the link" }));
  expect(screen.getByText("Enter your email address.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Send the link" }));
  expect(await screen.findByRole("status")).toHaveTextContent("we sent it a link");
  expect(sent.at(-1)?.body).toEqual({ email: "ann@example.com", redirectTo: "/reset-password" });
});

it("reset password: needs the link's token, matching passwords, and reports a dead link", async () => {
  const { sent } = mockServer({
    "POST /reset-password": () => ({ status: 400, body: { code: "INVALID_TOKEN", message: "Invalid token" } }),
  });
  const routes = [{ path: "/reset-password", element: <ResetPassword /> }];
  const first = renderAt("/reset-password", routes);
  expect(screen.getByRole("alert")).toHaveTextContent("This page needs the link from the email.");
  first.unmount();
  const second = renderAt("/reset-password?error=INVALID_TOKEN", routes);
  expect(screen.getByRole("alert")).toHaveTextContent("This link is invalid or was already used.");
  second.unmount();
  renderAt("/reset-password?token=abc", routes);
  await userEvent.type(screen.getByLabelText("New password"), "new-password-1");
  await userEvent.type(screen.getByLabelText("Repeat the new password"), "new-password-2");
  await userEvent.click(screen.getByRole("button", { name: "Set the new password" }));
  expect(screen.getByText("The two passwords differ.")).toBeInTheDocument();
  expect(sent.filter((s) => s.method === "POST")).toEqual([]);
  await userEvent.clear(screen.getByLabelText("Repeat the new password"));
  await userEvent.type(screen.getByLabelText("Repeat the new password"), "new-password-1");
  await userEvent.click(screen.getByRole("button", { name: "Set the new password" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("This link is invalid or was already used.");
  expect(sent.find((s) => s.path === "/reset-password")?.body).toEqual({ newPassword: "new-password-1", token: "abc" });
});

it("reset password: the page says whether the account was signed out everywhere, from the answer", async () => {
  for (const [revoked, text] of [
    [true, "every device signed in to your account was signed out"],
    [false, "Devices already signed in stay signed in"],
  ] as const) {
    mockServer({ "POST /reset-password": () => ({ body: { status: true, sessionsRevoked: revoked } }) });
    const page = renderAt("/reset-password?token=abc", [{ path: "/reset-password", element: <ResetPassword /> }]);
    await userEvent.type(screen.getByLabelText("New password"), "new-password-1");
    await userEvent.type(screen.getByLabelText("Repeat the new password"), "new-password-1");
    await userEvent.click(screen.getByRole("button", { name: "Set the new password" }));
    expect(await screen.findByText(new RegExp(text))).toBeInTheDocument();
    page.unmount();
  }
});

it("verify-email: a failed link says why and offers a new one", async () => {
  mockServer({ "GET /get-session": () => ({ body: null }) });
  renderAt("/verify-email?error=TOKEN_EXPIRED", [{ path: "/verify-email", element: <VerifyEmail /> }]);
  expect(screen.getByRole("alert")).toHaveTextContent("This link has expired. Ask for a new one.");
  expect(await screen.findByRole("button", { name: "Send the verification link again" })).toBeInTheDocument();
});

it("links mailed to / go on: a reset token to the reset page, an error to the error page", async () => {
  const { Home, ErrorPage: Err } = await import("../pages/auth");
  mockServer({ "GET /get-session": () => ({ body: null }) });
  const routes = [
    { path: "/", element: <Home /> },
    { path: "/reset-password", element: <ResetPassword /> },
    { path: "/error", element: <Err /> },
  ];
  const a = renderAt("/?token=abc123", routes);
  expect(await screen.findByLabelText("New password")).toBeInTheDocument();
  a.unmount();
  renderAt("/?error=INVALID_TOKEN", routes);
  expect(await screen.findByRole("alert")).toHaveTextContent("This link is invalid or was already used.");
});

it("sign-up keeps redirectTo through the verification link", async () => {
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-up/email": () => ({ body: { token: null, user } }),
  });
  renderAt("/sign-up?redirectTo=%2Faccept-invitation%2Fi1", [{ path: "/sign-up", element: <SignUp /> }]);
  await userEvent.type(screen.getByLabelText("Name"), "Ann");
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "long-enough-1");
  await userEvent.click(screen.getByRole("button", { name: "Create account" }));
  await screen.findByText(/Check your inbox/);
  expect((sent.find((s) => s.path === "/sign-up/email")?.body as { callbackURL: string }).callbackURL).toBe(
    "/verify-email?redirectTo=%2Faccept-invitation%2Fi1",
  );
});

it("a 429 says how long to wait", async () => {
  mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => ({
      status: 429,
      body: { code: "TOO_MANY_REQUESTS", message: "Too many requests. Please try again later." },
      headers: { "x-retry-after": "7" },
    }),
  });
  renderAt("/sign-in", [{ path: "/sign-in", element: <SignIn /> }]);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "whatever-1");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("Too many attempts. Try again in 7 seconds.");
});

it("sign-in while signed in goes on to redirectTo", async () => {
  mockServer({ "GET /get-session": () => ({ body: session }), "GET /social-providers": () => ({ body: [] }) });
  renderAt("/sign-in?redirectTo=%2Forganizations%2Fo1", signInRoutes);
  expect(await screen.findByText("org page")).toBeInTheDocument();
});

it("sign-in: an account with two-factor sign-in asks for a code, then a backup code", async () => {
  let signedIn = false;
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => ({ body: { twoFactorRedirect: true, twoFactorMethods: ["totp"] } }),
    "POST /two-factor/verify-totp": () => ({ status: 401, body: { code: "INVALID_CODE", message: "Invalid code" } }),
    "POST /two-factor/verify-backup-code": () => {
      signedIn = true;
      return { body: { token: "t", user } };
    },
    "GET /get-session": () => ({ body: signedIn ? session : null }),
  });
  renderAt("/sign-in?redirectTo=%2Forganizations%2Fo1", signInRoutes);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "correct-horse");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByRole("heading", { name: "Two-factor sign-in" })).toBeInTheDocument();
  await userEvent.click(screen.getByRole("button", { name: "Verify" }));
  expect(screen.getByText("Enter the 6-digit code.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Authentication code"), "123456");
  await userEvent.click(screen.getByRole("button", { name: "Verify" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("That code is not right, or it was used already.");
  await userEvent.click(screen.getByRole("button", { name: "Use a backup code instead" }));
  await userEvent.type(screen.getByLabelText("Backup code"), "abcde-12345");
  await userEvent.click(screen.getByLabelText("Trust this browser for 30 days"));
  await userEvent.click(screen.getByRole("button", { name: "Verify" }));
  expect(await screen.findByText("org page")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/two-factor/verify-totp")?.body).toEqual({ code: "123456", trustDevice: false });
  expect(sent.find((s) => s.path === "/two-factor/verify-backup-code")?.body).toEqual({ code: "abcde-12345", trustDevice: true });
});

it("sign-in: codes by mail only: the first code is sent at once, then verified", async () => {
  let signedIn = false;
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => ({ body: { twoFactorRedirect: true, twoFactorMethods: ["otp"] } }),
    "POST /two-factor/send-otp": () => ({ body: { status: true } }),
    "POST /two-factor/verify-otp": () => {
      signedIn = true;
      return { body: { token: "t", user } };
    },
    "GET /get-session": () => ({ body: signedIn ? session : null }),
  });
  renderAt("/sign-in", signInRoutes);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password"), "correct-horse");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByText("We emailed you a 6-digit code. It works once, for 5 minutes.")).toBeInTheDocument();
  await waitFor(() => expect(sent.filter((s) => s.path === "/two-factor/send-otp")).toHaveLength(1));
  expect(screen.queryByRole("button", { name: "Use the authenticator app instead" })).toBeNull();
  await userEvent.type(screen.getByLabelText("Code from the email"), "654321");
  await userEvent.click(screen.getByRole("button", { name: "Verify" }));
  expect(await screen.findByText("account page")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/two-factor/verify-otp")?.body).toEqual({ code: "654321", trustDevice: false });
});

it("two-factor page: after a provider sign-in, the code finishes it and goes to this site's target only", async () => {
  let signedIn = false;
  const { sent } = mockServer({
    "POST /two-factor/verify-totp": () => {
      signedIn = true;
      return { body: { token: "t", user } };
    },
    "GET /get-session": () => ({ body: signedIn ? session : null }),
  });
  const target = encodeURIComponent(`${window.location.origin}/organizations/o1`);
  renderAt(`/two-factor?methods=totp,otp&redirectTo=${target}`, [
    { path: "/two-factor", element: <TwoFactorPage /> },
    { path: "/organizations/:id", element: <p>org page</p> },
  ]);
  expect(screen.getByRole("button", { name: "Email me a code" })).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Authentication code"), "123456");
  await userEvent.click(screen.getByRole("button", { name: "Verify" }));
  expect(await screen.findByText("org page")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/two-factor/verify-totp")?.body).toEqual({ code: "123456", trustDevice: false });
});

it("two-factor page: after a provider sign-in, the tenant's app (a trusted origin) is where it ends; another origin is not", async () => {
  for (const [target, trusted] of [
    ["https://app.acme.example/dash?x=1", true],
    ["https://evil.example/dash", false],
  ] as const) {
    let signedIn = false;
    const assign = vi.fn();
    vi.stubGlobal("location", { ...window.location, assign, origin: window.location.origin });
    mockServer({
      "GET /page-settings": () => ({
        body: {
          appName: "Acme",
          emailVerification: { sendOnSignUp: false, required: false },
          password: { minLength: 8, maxLength: 128 },
          byMail: false,
          trustedOrigins: [window.location.origin, "https://*.acme.example"],
        },
      }),
      "POST /two-factor/verify-totp": () => {
        signedIn = true;
        return { body: { token: "t", user } };
      },
      "GET /get-session": () => ({ body: signedIn ? session : null }),
    });
    const page = renderAt(`/two-factor?methods=totp&redirectTo=${encodeURIComponent(target)}`, [
      { path: "/two-factor", element: <TwoFactorPage /> },
      { path: "/account", element: <p>account page</p> },
    ]);
    await userEvent.type(screen.getByLabelText("Authentication code"), "123456");
    await userEvent.click(screen.getByRole("button", { name: "Verify" }));
    if (trusted) await waitFor(() => expect(assign).toHaveBeenCalledWith(target));
    else expect(await screen.findByText("account page")).toBeInTheDocument();
    if (!trusted) expect(assign).not.toHaveBeenCalled();
    page.unmount();
    vi.unstubAllGlobals();
  }
});

it("sign-up: the server's password rules are said before typing and checked", async () => {
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "GET /page-settings": () => ({ body: { appName: "Acme", emailVerification: { sendOnSignUp: false, required: false }, password: { minLength: 12, maxLength: 64 } } }),
  });
  renderAt("/sign-up", [{ path: "/sign-up", element: <SignUp /> }]);
  expect(await screen.findByText("At least 12 characters.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Name"), "Ann");
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Password", { selector: "input" }), "eleven-char");
  await userEvent.click(screen.getByRole("button", { name: "Create account" }));
  expect(screen.getByText("Use at least 12 characters.")).toBeInTheDocument();
  expect(sent.some((s) => s.path === "/sign-up/email")).toBe(false);
});

it("sign-up that mailed a link: the account page says check your inbox; without one, it offers a link", async () => {
  for (const mailed of [true, false]) {
    const unverified = { ...session, user: { ...user, emailVerified: false } };
    mockServer({
      "GET /social-providers": () => ({ body: [] }),
      "GET /page-settings": () => ({ body: { appName: "Gatehouse", emailVerification: { sendOnSignUp: mailed, required: false }, password: { minLength: 8, maxLength: 128 } } }),
      "POST /sign-up/email": () => ({ body: { token: "t1", user: unverified.user } }),
      "GET /get-session": () => ({ body: unverified }),
    });
    const page = renderAt("/sign-up", [
      { path: "/sign-up", element: <SignUp /> },
      { path: "/account", element: <Account /> },
    ]);
    await screen.findByText("At least 8 characters.");
    await userEvent.type(screen.getByLabelText("Name"), "Ann");
    await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
    await userEvent.type(screen.getByLabelText("Password", { selector: "input" }), "a-good-password");
    await userEvent.click(screen.getByRole("button", { name: "Create account" }));
    if (mailed) {
      expect(await screen.findByText(/Check your inbox: we sent a link to ann@example.com/)).toBeInTheDocument();
      expect(screen.getByRole("button", { name: "Send the verification link again" })).toBeInTheDocument();
    } else {
      expect(await screen.findByText(/Verify your address/)).toBeInTheDocument();
      expect(screen.getByRole("button", { name: "Send me a verification link" })).toBeInTheDocument();
    }
    page.unmount();
  }
});
