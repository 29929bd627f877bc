import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { Admin } from "../pages/admin";
import { deferred, mockServer, renderAt, session, user } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const admin = { ...session, user: { ...user, id: "root", name: "Root", email: "root@example.com", role: "admin" } };
const users = Array.from({ length: 25 }, (_, i) => ({ ...user, id: `u${i}`, name: `User ${i}`, email: `user${i}@example.com` }));

function server(extra: Parameters<typeof mockServer>[0] = {}) {
  return mockServer({
    "GET /get-session": () => ({ body: admin }),
    "GET /admin/list-users": (_b, url) => {
      const offset = Number(url.searchParams.get("offset") ?? 0);
      const limit = Number(url.searchParams.get("limit") ?? 100);
      const search = url.searchParams.get("searchValue");
      const all = search ? users.filter((u) => u.email.includes(search)) : users;
      return { body: { users: all.slice(offset, offset + limit), total: all.length, limit, offset } };
    },
    ...extra,
  });
}

it("pages through users and searches by email", async () => {
  const { sent } = server();
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  expect(await screen.findByText("1–20 of 25")).toBeInTheDocument();
  expect(screen.getByRole("button", { name: "Previous" })).toBeDisabled();
  await userEvent.click(screen.getByRole("button", { name: "Next" }));
  expect(await screen.findByText("21–25 of 25")).toBeInTheDocument();
  expect(screen.getByRole("button", { name: "Next" })).toBeDisabled();
  await userEvent.type(screen.getByLabelText("Search by email"), "user7");
  expect(await screen.findByText("1–1 of 1")).toBeInTheDocument();
  const last = sent.filter((s) => s.path === "/admin/list-users").at(-1);
  expect(last).toBeDefined();
});

it("refusals are sentences: a non-admin sees why", async () => {
  mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /admin/list-users": () => ({ status: 403, body: { code: "YOU_ARE_NOT_ALLOWED_TO_LIST_USERS", message: "You are not allowed to list users" } }),
  });
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  expect(await screen.findByRole("alert")).toHaveTextContent("You are not allowed to list users.");
  // Nothing of the console is offered.
  expect(screen.queryByRole("heading", { name: "Create a user" })).toBeNull();
  expect(screen.queryByLabelText("Search by email")).toBeNull();
  expect(screen.getByRole("link", { name: "Back to your account" })).toBeInTheDocument();
});

it("create user: validates, shows pending, then the server's refusal", async () => {
  const gate = deferred();
  const { sent } = server({ "POST /admin/create-user": () => gate.reply });
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  const form = (await screen.findByRole("heading", { name: "Create a user" })).closest("section")!;
  await userEvent.click(within(form).getByRole("button", { name: "Create user" }));
  expect(within(form).getByText("Enter a name.")).toBeInTheDocument();
  expect(within(form).getByText("Enter your email address.")).toBeInTheDocument();
  expect(within(form).getByText("Use at least 8 characters.")).toBeInTheDocument();
  expect(sent.some((s) => s.path === "/admin/create-user")).toBe(false);
  await userEvent.type(within(form).getByLabelText("Name"), "Dan");
  await userEvent.type(within(form).getByLabelText("Email"), "dan@example.com");
  await userEvent.type(within(form).getByLabelText("Password", { selector: "input" }), "dan-password-1");
  await userEvent.click(within(form).getByRole("button", { name: "Create user" }));
  expect(await within(form).findByRole("button", { name: "Please wait…" })).toBeDisabled();
  gate.release({ status: 400, body: { code: "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", message: "User already exists. Use another email." } });
  expect(await within(form).findByRole("alert")).toHaveTextContent("An account with this email already exists. Use another email.");
  expect(sent.find((s) => s.path === "/admin/create-user")?.body).toEqual({ name: "Dan", email: "dan@example.com", password: "dan-password-1", role: "user" });
});

it("ban: the duration must be positive; the ban is sent in seconds", async () => {
  const { sent } = server({ "POST /admin/ban-user": () => ({ body: { user: { ...users[3], banned: true } } }) });
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  const row = await screen.findByRole("row", { name: /User 3\b/ });
  await userEvent.click(within(row).getByRole("button", { name: "Ban" }));
  const dialog = screen.getByRole("dialog", { name: "Ban User 3?" });
  await userEvent.type(within(dialog).getByLabelText(/days/), "-1");
  expect(within(dialog).getByText("A positive number of days, or empty for ever.")).toBeInTheDocument();
  await userEvent.clear(within(dialog).getByLabelText(/days/));
  await userEvent.type(within(dialog).getByLabelText(/days/), "2");
  await userEvent.type(within(dialog).getByLabelText("Reason"), "spam");
  await userEvent.click(within(dialog).getByRole("button", { name: "Ban" }));
  await waitFor(() => expect(screen.queryByRole("dialog")).toBeNull());
  expect(sent.find((s) => s.path === "/admin/ban-user")?.body).toEqual({ userId: "u3", banReason: "spam", banExpiresIn: 172800 });
});

it("two-factor: the list marks it, and an administrator turns it off for a user", async () => {
  users[3] = { ...users[3]!, twoFactorEnabled: true };
  const { sent } = server({
    "POST /admin/list-user-sessions": () => ({ body: { sessions: [] } }),
    "POST /admin/disable-two-factor": () => ({ body: { success: true } }),
  });
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  const row = (await screen.findByText("user3@example.com")).closest("tr")!;
  expect(within(row).getByTitle("Two-factor sign-in on")).toBeInTheDocument();
  expect(within(screen.getByText("user4@example.com").closest("tr")!).queryByTitle("Two-factor sign-in on")).toBeNull();
  await userEvent.click(within(row).getByRole("button", { name: "Sessions" }));
  await userEvent.click(await screen.findByRole("button", { name: "Turn off two-factor sign-in" }));
  expect(await screen.findByText("Two-factor sign-in is off for User 3.")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/admin/disable-two-factor")?.body).toEqual({ userId: "u3" });
  users[3] = { ...users[3]!, twoFactorEnabled: false };
});

it("a role picked is confirmed before it is set, and the change is said", async () => {
  const { sent } = server({ "POST /admin/set-role": () => ({ body: { user: { ...users[3], role: "admin" } } }) });
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  const select = await screen.findByRole("combobox", { name: "Role of User 3" });
  await userEvent.selectOptions(select, "admin");
  const dialog = screen.getByRole("dialog", { name: "Make User 3 admin?" });
  // Cancelled: nothing sent.
  await userEvent.click(within(dialog).getByRole("button", { name: "Cancel" }));
  expect(sent.some((s) => s.path === "/admin/set-role")).toBe(false);
  await userEvent.selectOptions(select, "admin");
  await userEvent.click(within(screen.getByRole("dialog", { name: "Make User 3 admin?" })).getByRole("button", { name: "Change role" }));
  await waitFor(() => expect(sent.find((s) => s.path === "/admin/set-role")?.body).toEqual({ userId: "u3", role: "admin" }));
  expect(await screen.findByText("User 3 is now admin.")).toBeInTheDocument();
});
