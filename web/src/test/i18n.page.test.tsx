import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { expect, it } from "vitest";
import { LanguageProvider } from "../i18n";
import { SignIn } from "../pages/auth";
import { mockServer, renderAt } from "./helpers";

it("the sign-in page in German: its words, its field errors and the server's refusal", async () => {
  mockServer({
    "GET /social-providers": () => ({ body: [] }),
    "POST /sign-in/email": () => ({ status: 401, body: { code: "INVALID_EMAIL_OR_PASSWORD", message: "Invalid email or password" } }),
  });
  renderAt("/sign-in", [
    {
      path: "/sign-in",
      element: (
        <LanguageProvider initial="de">
          <SignIn />
        </LanguageProvider>
      ),
    },
  ]);
  expect(screen.getByRole("heading", { name: "Anmelden" })).toBeInTheDocument();
  expect(screen.getByLabelText("Angemeldet bleiben")).toBeChecked();
  expect(screen.getByRole("button", { name: "Passwort anzeigen" })).toBeInTheDocument();
  await userEvent.click(screen.getByRole("button", { name: "Anmelden" }));
  expect(screen.getByText("Geben Sie Ihre E-Mail-Adresse ein.")).toBeInTheDocument();
  expect(screen.getByText("Geben Sie Ihr Passwort ein.")).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("E-Mail"), "ann@example.com");
  await userEvent.type(screen.getByLabelText("Passwort", { selector: "input" }), "wrong-password");
  await userEvent.click(screen.getByRole("button", { name: "Anmelden" }));
  expect(await screen.findByText("E-Mail-Adresse oder Passwort sind falsch.")).toBeInTheDocument();
  expect(document.documentElement.lang).toBe("de");
});
