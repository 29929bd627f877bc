import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { Account } from "../pages/account";
import { mockServer, renderAt, session } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const routes = [{ path: "/account", element: <Account /> }];

function base(extra: Record<string, Parameters<typeof mockServer>[0][string]> = {}) {
  return mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /list-sessions": () => ({
      body: [
        { ...session.session, id: "s2", token: "t2", userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1", updatedAt: "2026-11-23T10:00:00.000Z" },
        session.session,
      ],
    }),
    "GET /list-accounts": () => ({ body: [{ id: "a1", providerId: "credential", accountId: "u1", provider: "credential", userId: "u1", scopes: [], createdAt: "2026-11-01T10:00:00.000Z", updatedAt: "2026-11-01T10:00:00.000Z" }] }),
    "GET /social-providers": () => ({ body: [] }),
    ...extra,
  });
}

it("signed out, the account page sends to sign-in and back", async () => {
  mockServer({ "GET /get-session": () => ({ body: null }) });
  renderAt("/account", [...routes, { path: "/sign-in", element: <p>sign-in page</p> }]);
  expect(await screen.findByText("sign-in page")).toBeInTheDocument();
});

it("lists sessions with the current one first, and revokes another after confirmation", async () => {
  const { sent } = base({ "POST /revoke-session": () => ({ body: { status: true } }) });
  renderAt("/account", routes);
  const list = await screen.findByRole("list", { name: "Your sessions" });
  await waitFor(() => expect(within(list).getAllByRole("listitem")).toHaveLength(2));
  const [first, second] = within(list).getAllByRole("listitem");
  expect(first).toHaveTextContent("Chrome on Linux");
  expect(first).toHaveTextContent("this session");
  expect(second).toHaveTextContent("Safari on iOS");
  await userEvent.click(within(second!).getByRole("button", { name: "Revoke" }));
  const dialog = screen.getByRole("dialog", { name: "Revoke this session?" });
  await userEvent.click(within(dialog).getByRole("button", { name: "Revoke" }));
  await waitFor(() => expect(sent.find((s) => s.path === "/revoke-session")?.body).toEqual({ token: "t2" }));
  await waitFor(() => expect(screen.queryByRole("dialog")).toBeNull());
});

it("change password: validates and sends revokeOtherSessions", async () => {
  const { sent } = base({ "POST /change-password": () => ({ body: { token: "t3", user: session.user } }) });
  renderAt("/account", routes);
  await userEvent.click(await screen.findByRole("button", { name: "Change password" }));
  expect(screen.getByText("Enter your current password.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Current password"), "old-password-1");
  await userEvent.type(screen.getByLabelText("New password"), "short");
  expect(screen.getByText("Use at least 8 characters.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("New password"), "-but-longer");
  await userEvent.click(screen.getByRole("button", { name: "Change password" }));
  expect(await screen.findByText(/Your password was changed and your other sessions were signed out/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/change-password")?.body).toEqual({ currentPassword: "old-password-1", newPassword: "short-but-longer", revokeOtherSessions: true });
});

it("SESSION_NOT_FRESH asks for the password again, then retries", async () => {
  let calls = 0;
  const { sent } = base({
    "POST /change-email": () => (++calls === 1 ? { status: 403, body: { code: "SESSION_NOT_FRESH", message: "Session is not fresh" } } : { body: { status: true } }),
    "POST /sign-in/email": () => ({ body: { redirect: false, token: "t9", url: null, user: session.user } }),
  });
  renderAt("/account", routes);
  await userEvent.type(await screen.findByLabelText("New email"), "ann@new.example");
  await userEvent.click(screen.getByRole("button", { name: "Change email" }));
  const dialog = await screen.findByRole("dialog", { name: "Confirm it's you" });
  expect(within(dialog).getByLabelText("Password")).toHaveFocus();
  await userEvent.type(within(dialog).getByLabelText("Password"), "my-password-1");
  await userEvent.click(within(dialog).getByRole("button", { name: "Continue" }));
  expect(await screen.findByText(/We sent a confirmation link/)).toBeInTheDocument();
  expect(calls).toBe(2);
  expect(sent.find((s) => s.path === "/sign-in/email")?.body).toEqual({ email: "ann@example.com", password: "my-password-1" });
});

it("dialogs close with Escape and give focus back", async () => {
  base();
  renderAt("/account", routes);
  const open = await screen.findByRole("button", { name: "Delete my account…" });
  await userEvent.click(open);
  const dialog = screen.getByRole("dialog", { name: "Delete your account?" });
  expect(within(dialog).getByLabelText("Password")).toHaveFocus();
  await userEvent.keyboard("{Escape}");
  expect(screen.queryByRole("dialog")).toBeNull();
  expect(open).toHaveFocus();
});

it("delete account: the mailed-confirmation answer says to check the inbox", async () => {
  const { sent } = base({ "POST /delete-user": () => ({ body: { success: true, message: "Verification email sent" } }) });
  renderAt("/account", routes);
  await userEvent.click(await screen.findByRole("button", { name: "Delete my account…" }));
  await userEvent.type(within(screen.getByRole("dialog")).getByLabelText("Password"), "my-password-1");
  await userEvent.click(within(screen.getByRole("dialog")).getByRole("button", { name: "Delete account" }));
  expect(await screen.findByText(/We sent a confirmation link to ann@example.com/)).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/delete-user")?.body).toEqual({ password: "my-password-1", callbackURL: "/sign-in" });
});

it("profile: a name is required; a saved profile says so, also once the session reloads", async () => {
  let saved = false;
  const { sent } = base({
    "POST /update-user": () => {
      saved = true;
      return { body: { status: true } };
    },
    // The reloaded session carries the change (a new name and updatedAt).
    "GET /get-session": () => ({
      body: saved ? { ...session, user: { ...session.user, name: "Annie", updatedAt: "2026-11-26T10:00:00.000Z" } } : session,
    }),
  });
  renderAt("/account", routes);
  const name = await screen.findByLabelText("Name");
  await userEvent.clear(name);
  expect(screen.getByText("Enter your name.")).toBeInTheDocument();
  expect(screen.getByRole("button", { name: "Save profile" })).toBeDisabled();
  await userEvent.type(name, "Annie");
  await userEvent.click(screen.getByRole("button", { name: "Save profile" }));
  expect(await screen.findByText("Saved.")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/update-user")?.body).toEqual({ name: "Annie", image: null });
  await waitFor(() => expect(sent.filter((s) => s.path === "/get-session").length).toBeGreaterThan(1));
  expect(screen.getByText("Saved.")).toBeInTheDocument();
  expect(screen.getByLabelText("Name")).toHaveValue("Annie");
  // Editing again forgets the notice.
  await userEvent.type(screen.getByLabelText("Name"), "!");
  expect(screen.queryByText("Saved.")).toBeNull();
});
