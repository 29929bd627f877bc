// German: Signing in and up, passwords, codes and links by mail, the second step; the shell and form parts. Each English sentence, and its German.
const pages: Record<string, string> = {
  // The shell.
  Language: "Sprache",
  "Signed in as": "Angemeldet als",
  Account: "Konto",
  Organizations: "Organisationen",
  Admin: "Verwaltung",
  "Sign in": "Anmelden",
  "Sign out": "Abmelden",
  "Create account": "Konto erstellen",
  "Stop impersonating": "Identitätswechsel beenden",
  "Back to the start": "Zurück zum Anfang",
  "Current organization": "Aktuelle Organisation",
  "No organization chosen": "Keine Organisation gewählt",
  "Acting as {name} ({email})": "Sie handeln als {name} ({email})",
  "Page not found": "Seite nicht gefunden",
  "Need help? Write to {email}.": "Brauchen Sie Hilfe? Schreiben Sie an {email}.",
  // Form parts (components/ui.tsx): labels, hints and field errors given to Field and
  // PasswordField are translated there, so pages pass the English sentence.
  "Please wait…": "Bitte warten…",
  Show: "Anzeigen",
  Hide: "Verbergen",
  "Show {field}": "{field} anzeigen",
  "Hide {field}": "{field} verbergen",
  Cancel: "Abbrechen",
  Copy: "Kopieren",
  Copied: "Kopiert",
  Done: "Fertig",
  // Sign-in (pages/auth.tsx).
  Email: "E-Mail",
  Password: "Passwort",
  Name: "Name",
  "Enter your email address.": "Geben Sie Ihre E-Mail-Adresse ein.",
  "Enter your password.": "Geben Sie Ihr Passwort ein.",
  "Remember me": "Angemeldet bleiben",
  or: "oder",
  "Continue with {provider}": "Weiter mit {provider}",
  "We sent a new verification link to {email}.": "Wir haben einen neuen Bestätigungslink an {email} geschickt.",
  "Send the verification link again": "Bestätigungslink erneut senden",
  "Send me a verification link": "Bestätigungslink senden",
  "Two-factor sign-in": "Zwei-Faktor-Anmeldung",
  "Forgot your password?": "Passwort vergessen?",
  "Create an account": "Konto erstellen",
  // Sign-up, verification, the error page (pages/auth.tsx).
  "Enter your name.": "Geben Sie Ihren Namen ein.",
  "Use at least {n} characters.": "Verwenden Sie mindestens {n} Zeichen.",
  "Use at most {n} characters.": "Verwenden Sie höchstens {n} Zeichen.",
  "At least {n} characters.": "Mindestens {n} Zeichen.",
  "Check your inbox: we sent a link to {email} to verify your address before you sign in.":
    "Sehen Sie in Ihr Postfach: Wir haben einen Link an {email} geschickt, mit dem Sie Ihre Adresse bestätigen, bevor Sie sich anmelden.",
  "or, without a password": "oder ohne Passwort",
  "Already have an account?": "Sie haben schon ein Konto?",
  "Email verification": "E-Mail-Bestätigung",
  "Your address {email} is not verified yet: follow the link we emailed you.":
    "Ihre Adresse {email} ist noch nicht bestätigt: Folgen Sie dem Link aus unserer E-Mail.",
  "Your email address is verified.": "Ihre E-Mail-Adresse ist bestätigt.",
  Continue: "Weiter",
  "Sign in to continue": "Melden Sie sich an, um fortzufahren",
  "Something went wrong": "Etwas ist schiefgegangen",
  "Something went wrong ({code}).": "Etwas ist schiefgegangen ({code}).",
  "Code: {code}": "Code: {code}",
  "Loading…": "Wird geladen…",
  // The forgotten password (pages/password.tsx).
  "If an account uses {email}, we sent it a link to choose a new password. It works for one hour.":
    "Falls ein Konto {email} verwendet, haben wir ihm einen Link geschickt, mit dem Sie ein neues Passwort wählen. Er gilt eine Stunde.",
  "Enter your email address and we will send you a link to choose a new password.":
    "Geben Sie Ihre E-Mail-Adresse ein, und wir schicken Ihnen einen Link, mit dem Sie ein neues Passwort wählen.",
  "Send the link": "Link senden",
  "Email me a code instead": "Stattdessen einen Code per E-Mail senden",
  "Back to sign-in": "Zurück zur Anmeldung",
  "The two passwords differ.": "Die beiden Passwörter sind verschieden.",
  "This page needs the link from the email.": "Diese Seite braucht den Link aus der E-Mail.",
  "Ask for a new link": "Einen neuen Link anfordern",
  "Your password was changed, and every device signed in to your account was signed out.":
    "Ihr Passwort wurde geändert, und jedes angemeldete Gerät wurde von Ihrem Konto abgemeldet.",
  "Your password was changed. Devices already signed in stay signed in: sign them out from your account page if you did not expect them.":
    "Ihr Passwort wurde geändert. Bereits angemeldete Geräte bleiben angemeldet: Melden Sie sie auf Ihrer Kontoseite ab, wenn Sie sie nicht erwartet haben.",
  "Sign in with your new password": "Mit dem neuen Passwort anmelden",
  "New password": "Neues Passwort",
  "Repeat the new password": "Neues Passwort wiederholen",
  "Set the new password": "Neues Passwort festlegen",
  "Choose a new password": "Neues Passwort wählen",
  // Codes and links by mail (pages/bymail.tsx).
  "Too many wrong codes: this one no longer works. Ask for a new code.":
    "Zu viele falsche Codes: Dieser gilt nicht mehr. Fordern Sie einen neuen Code an.",
  "Check your inbox: we sent a sign-in link to {email}. Open it on this device or any other — it works once, for 5 minutes.":
    "Sehen Sie in Ihr Postfach: Wir haben einen Anmeldelink an {email} geschickt. Öffnen Sie ihn auf diesem oder einem anderen Gerät — er gilt einmal, 5 Minuten lang.",
  "Use another way": "Anders anmelden",
  "Email me a code": "Code per E-Mail senden",
  "Email me a link": "Link per E-Mail senden",
  "Sign in with a code": "Mit einem Code anmelden",
  "We emailed a 6-digit code to {email}. It works once, for 5 minutes.":
    "Wir haben einen 6-stelligen Code an {email} geschickt. Er gilt einmal, 5 Minuten lang.",
  "Entering it creates your account.": "Mit seiner Eingabe wird Ihr Konto angelegt.",
  "If no account uses this address yet, entering it creates one.":
    "Falls noch kein Konto diese Adresse verwendet, wird mit seiner Eingabe eines angelegt.",
  "Code from the email": "Code aus der E-Mail",
  "Enter the 6-digit code.": "Geben Sie den 6-stelligen Code ein.",
  "We sent a new code to {email}.": "Wir haben einen neuen Code an {email} geschickt.",
  "Email me a new code": "Neuen Code per E-Mail senden",
  "Your password was changed.": "Ihr Passwort wurde geändert.",
  "Reset with a code": "Mit einem Code zurücksetzen",
  "If an account uses {email}, we emailed it a 6-digit code. It works once, for 5 minutes.":
    "Falls ein Konto {email} verwendet, haben wir ihm einen 6-stelligen Code geschickt. Er gilt einmal, 5 Minuten lang.",
  "We sent a new code.": "Wir haben einen neuen Code geschickt.",
  "Use a link instead": "Stattdessen einen Link verwenden",
  "Verify with a code instead": "Stattdessen mit einem Code bestätigen",
  "Verify with a code": "Mit einem Code bestätigen",
  "Verification code": "Bestätigungscode",
  Verify: "Bestätigen",
  "You sign in without a password (a code or link by email, a passkey or a provider).":
    "Sie melden sich ohne Passwort an (mit einem Code oder Link per E-Mail, einem Passkey oder einem Anbieter).",
  "To set one, we email you a code.": "Um eines festzulegen, schicken wir Ihnen einen Code per E-Mail.",
  "Set a password": "Passwort festlegen",
  // The second sign-in step (components/twofactor.tsx).
  "Second sign-in step": "Zweiter Anmeldeschritt",
  "Enter one of the backup codes you saved when you set up two-factor sign-in. Each works once.":
    "Geben Sie einen der Ersatzcodes ein, die Sie beim Einrichten der Zwei-Faktor-Anmeldung gespeichert haben. Jeder gilt einmal.",
  "We emailed you a 6-digit code. It works once, for 5 minutes.": "Wir haben Ihnen einen 6-stelligen Code geschickt. Er gilt einmal, 5 Minuten lang.",
  "Open your authenticator app and enter the 6-digit code it shows for this account.":
    "Öffnen Sie Ihre Authenticator-App und geben Sie den 6-stelligen Code ein, den sie für dieses Konto anzeigt.",
  "Backup code": "Ersatzcode",
  "Authentication code": "Authentifizierungscode",
  "Enter one of your backup codes.": "Geben Sie einen Ihrer Ersatzcodes ein.",
  "Trust this browser for 30 days": "Diesem Browser 30 Tage lang vertrauen",
  "Use the authenticator app instead": "Stattdessen die Authenticator-App verwenden",
  "Use a backup code instead": "Stattdessen einen Ersatzcode verwenden",
  "Start over": "Neu beginnen",
  "Sign in with a passkey": "Mit einem Passkey anmelden",
};

export default pages;
