import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { Account } from "../pages/account";
import { SignIn, SignUp } from "../pages/auth";
import { ForgotPassword } from "../pages/password";
import { mockServer, renderAt, session, user } from "./helpers";

beforeEach(() => {
  vi.unstubAllGlobals();
});

const settings = (byMail: boolean) => () => ({
  body: { appName: "Acme", emailVerification: { sendOnSignUp: false, required: false }, password: { minLength: 8, maxLength: 128 }, byMail },
});

const routes = [
  { path: "/sign-in", element: <SignIn /> },
  { path: "/sign-up", element: <SignUp /> },
  { path: "/account", element: <p>account page</p> },
];

it("sign-in by code: the address is checked, the code step signs in, a dead code says to ask again", async () => {
  let signedIn = false;
  let tries = 0;
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "GET /page-settings": settings(true),
    "POST /email-otp/send-verification-otp": () => ({ body: { success: true } }),
    "POST /sign-in/email-otp": () => {
      tries += 1;
      if (tries === 1) return { status: 403, body: { code: "TOO_MANY_ATTEMPTS", message: "Too many attempts" } };
      signedIn = true;
      return { body: { token: "t", user } };
    },
    "GET /get-session": () => ({ body: signedIn ? session : null }),
  });
  renderAt("/sign-in", routes);
  await userEvent.click(await screen.findByRole("button", { name: "Email me a code" }));
  expect(screen.getByText("Enter your email address.")).toBeInTheDocument();
  expect(sent.some((s) => s.method === "POST")).toBe(false);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Email me a code" }));
  expect(await screen.findByText(/We emailed a 6-digit code to/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/email-otp/send-verification-otp")?.body).toEqual({ email: "ann@example.com", type: "sign-in" });
  await userEvent.type(screen.getByLabelText("Code from the email"), "123456");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("Ask for a new code.");
  await userEvent.click(screen.getByRole("button", { name: "Email me a new code" }));
  expect(await screen.findByText("We sent a new code to ann@example.com.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Code from the email"), "654321");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByText("account page")).toBeInTheDocument();
  expect(sent.filter((s) => s.path === "/sign-in/email-otp").map((s) => s.body)).toEqual([
    { email: "ann@example.com", otp: "123456" },
    { email: "ann@example.com", otp: "654321" },
  ]);
});

it("sign-in by link: asks for it back to this page's target and says to check the inbox", async () => {
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "GET /page-settings": settings(true),
    "POST /sign-in/magic-link": () => ({ body: { status: true } }),
    "GET /get-session": () => ({ body: null }),
  });
  renderAt("/sign-in?redirectTo=%2Faccount&email=ann%40example.com", routes);
  await userEvent.click(await screen.findByRole("button", { name: "Email me a link" }));
  expect(await screen.findByText(/we sent a sign-in link to ann@example.com/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/sign-in/magic-link")?.body).toEqual({
    email: "ann@example.com",
    callbackURL: "/account",
    newUserCallbackURL: "/account",
    errorCallbackURL: "/error",
  });
  await userEvent.click(screen.getByRole("button", { name: "Use another way" }));
  expect(screen.getByLabelText("Password")).toBeInTheDocument();
});

it("without mail the ways by mail are not offered", async () => {
  mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "GET /page-settings": settings(false),
    "GET /get-session": () => ({ body: null }),
  });
  renderAt("/sign-in", routes);
  await screen.findByLabelText("Password");
  await new Promise((r) => setTimeout(r, 50));
  expect(screen.queryByRole("button", { name: "Email me a code" })).toBeNull();
});

it("sign-up by code: needs the name, sends it with the code", async () => {
  let signedIn = false;
  const { sent } = mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "GET /page-settings": settings(true),
    "POST /email-otp/send-verification-otp": () => ({ body: { success: true } }),
    "POST /sign-in/email-otp": () => {
      signedIn = true;
      return { body: { token: "t", user } };
    },
    "GET /get-session": () => ({ body: signedIn ? session : null }),
  });
  renderAt("/sign-up?redirectTo=%2Faccount", routes);
  await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
  await userEvent.click(await screen.findByRole("button", { name: "Email me a code" }));
  expect(screen.getByText("Enter your name.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Name"), "Ann");
  await userEvent.click(screen.getByRole("button", { name: "Email me a code" }));
  await userEvent.type(await screen.findByLabelText("Code from the email"), "123456");
  await userEvent.click(screen.getByRole("button", { name: "Create account" }));
  expect(await screen.findByText("account page")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/sign-in/email-otp")?.body).toEqual({ email: "ann@example.com", otp: "123456", name: "Ann" });
});

it("forgot password by code: the code and the new password together", async () => {
  const { sent } = mockServer({
    "GET /page-settings": settings(true),
    "POST /email-otp/request-password-reset": () => ({ body: { success: true } }),
    "POST /email-otp/reset-password": () => ({ body: { success: true } }),
  });
  renderAt("/forgot-password?email=ann%40example.com", [{ path: "/forgot-password", element: <ForgotPassword /> }]);
  await userEvent.click(await screen.findByRole("button", { name: "Email me a code instead" }));
  expect(await screen.findByText(/we emailed it a 6-digit code/)).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Code from the email"), "123456");
  await userEvent.type(screen.getByLabelText("New password", { selector: "input" }), "a-new-password-1");
  await userEvent.type(screen.getByLabelText("Repeat the new password", { selector: "input" }), "a-new-password-1");
  await userEvent.click(screen.getByRole("button", { name: "Set the new password" }));
  expect(await screen.findByText("Your password was changed.")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/email-otp/reset-password")?.body).toEqual({
    email: "ann@example.com",
    otp: "123456",
    password: "a-new-password-1",
  });
});

it("account: an unverified address can be verified by a code; no password yet, one is set by a code", async () => {
  let verified = false;
  const { sent } = mockServer({
    "GET /page-settings": settings(true),
    "GET /get-session": () => ({ body: { ...session, user: { ...user, emailVerified: verified } } }),
    "GET /list-sessions": () => ({ body: [session.session] }),
    "GET /list-accounts": () => ({ body: [] }),
    "GET /social-providers": () => ({ body: [] }),
    "POST /email-otp/send-verification-otp": () => ({ body: { success: true } }),
    "POST /email-otp/verify-email": () => {
      verified = true;
      return { body: { status: true, token: null, user: { ...user, emailVerified: true } } };
    },
    "POST /email-otp/request-password-reset": () => ({ body: { success: true } }),
    "POST /email-otp/reset-password": () => ({ body: { success: true } }),
  });
  renderAt("/account", [{ path: "/account", element: <Account /> }]);
  await userEvent.click(await screen.findByRole("button", { name: "Verify with a code instead" }));
  await userEvent.type(await screen.findByLabelText("Verification code"), "123456");
  await userEvent.click(screen.getByRole("button", { name: "Verify" }));
  expect(await screen.findByText("verified", { exact: true })).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/email-otp/verify-email")?.body).toEqual({ email: user.email, otp: "123456" });

  expect(screen.queryByLabelText("Current password")).toBeNull();
  await userEvent.click(screen.getByRole("button", { name: "Set a password" }));
  await userEvent.type(await screen.findByLabelText("Code from the email"), "654321");
  await userEvent.type(screen.getByLabelText("New password", { selector: "input" }), "a-first-password-1");
  await userEvent.type(screen.getByLabelText("Repeat the new password", { selector: "input" }), "a-first-password-1");
  await userEvent.click(screen.getByRole("button", { name: "Set the new password" }));
  expect(await screen.findByText("Your password was changed.")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/email-otp/request-password-reset")?.body).toEqual({ email: user.email });
});
