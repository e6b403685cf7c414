//! The sign-in, consent and error pages: small server-rendered HTML that works without
//! JavaScript, and the pieces that keep it safe.
//!
//! - Every interpolated value goes through [`escape`]; nothing a client or a request wrote is
//!   ever placed in HTML raw.
//! - Every form carries a CSRF token: an HMAC of the deployment secret over a per-browser
//!   binding (a random value the shell keeps in the [`CSRF_COOKIE`] cookie), the form's purpose
//!   and the time; [`verify_csrf`] checks it.
//! - The validated authorization request travels between the pages in a sealed [`Ticket`]
//!   (HMAC over its content and the same binding), so no server-side session is needed and a
//!   posted form cannot change the client, redirect URI, challenge or member.
//! - [`headers`] are what the shell must send with every page: a CSP with
//!   `frame-ancestors 'none'` and no script, `nosniff`, `no-referrer`, and no caching.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::authorize::AuthorizationRequest;
use super::encoding::{
    b64_encode_standard, b64url_decode, b64url_encode, constant_time_eq, mac, sha256,
};
use super::pkce::Challenge;
use super::AUTHORIZE_PATH;

/// The cookie holding the per-browser CSRF binding (`__Host-`: secure, this origin, path `/`).
pub const CSRF_COOKIE: &str = "__Host-floorgate-csrf";
/// Bytes of randomness in a binding.
pub const BINDING_BYTES: usize = 32;
/// How long a page's forms (and the ticket they carry) stay usable.
pub const FORM_TTL_MS: i64 = 30 * 60 * 1000;
/// Form field names.
pub const FIELD_CSRF: &str = "csrf";
pub const FIELD_TICKET: &str = "ticket";
pub const FIELD_CODE: &str = "code";
pub const FIELD_DECISION: &str = "decision";
pub const DECISION_ALLOW: &str = "allow";
pub const DECISION_DENY: &str = "deny";

/// Which form a CSRF token is for (a token of one form does not pass on another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    SignIn,
    Consent,
    /// The page where a member pastes an API key (`account_link`).
    ConnectAccount,
}

impl Form {
    fn label(self) -> &'static [u8] {
        match self {
            Form::SignIn => b"sign-in",
            Form::Consent => b"consent",
            Form::ConnectAccount => b"connect-account",
        }
    }
}

/// HTML-escapes text for element content and double- or single-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The binding cookie's value for a fresh browser: base64url of caller-supplied randomness.
pub fn new_binding(random: &[u8; BINDING_BYTES]) -> String {
    b64url_encode(random)
}

/// The `Set-Cookie` value that stores a binding.
pub fn binding_cookie(binding: &str) -> String {
    format!("{CSRF_COOKIE}={binding}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=1800")
}

const CSRF_DOMAIN: &[u8] = b"floorgate csrf v1";
const TICKET_DOMAIN: &[u8] = b"floorgate ticket v1";

/// `<issued_ms>.<mac>`: the token for `form`, bound to the browser's binding.
pub fn csrf_token(secret: &[u8], binding: &str, form: Form, now: i64) -> String {
    let issued = now.to_string();
    let tag = mac(
        secret,
        &[
            CSRF_DOMAIN,
            form.label(),
            binding.as_bytes(),
            issued.as_bytes(),
        ],
    );
    format!("{issued}.{}", b64url_encode(&tag))
}

/// Why a posted form was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormError {
    /// No binding cookie, a token that does not verify, or one of another form or browser.
    Csrf,
    Expired,
    BadTicket,
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormError::Csrf => write!(f, "This form could not be verified (it may have come from another site, or cookies are blocked). Start the sign-in again from your application."),
            FormError::Expired => write!(f, "This page was open too long (more than 30 minutes). Start the sign-in again from your application."),
            FormError::BadTicket => write!(f, "This sign-in request was changed or is damaged. Start the sign-in again from your application."),
        }
    }
}

/// Checks a posted CSRF token against the browser's binding (the cookie) and the form.
pub fn verify_csrf(
    secret: &[u8],
    binding: Option<&str>,
    token: Option<&str>,
    form: Form,
    now: i64,
) -> Result<(), FormError> {
    let (Some(binding), Some(token)) = (binding, token) else {
        return Err(FormError::Csrf);
    };
    if binding.is_empty() {
        return Err(FormError::Csrf);
    }
    let (issued, tag) = token.split_once('.').ok_or(FormError::Csrf)?;
    let issued_ms: i64 = issued.parse().map_err(|_| FormError::Csrf)?;
    let expected = mac(
        secret,
        &[
            CSRF_DOMAIN,
            form.label(),
            binding.as_bytes(),
            issued.as_bytes(),
        ],
    );
    let given = b64url_decode(tag).ok_or(FormError::Csrf)?;
    if !constant_time_eq(&given, &expected) {
        return Err(FormError::Csrf);
    }
    if now < issued_ms || now - issued_ms >= FORM_TTL_MS {
        return Err(FormError::Expired);
    }
    Ok(())
}

/// The authorization request carried between the pages, and after sign-in who signed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub state: Option<String>,
    pub scope: String,
    pub resource: String,
    /// Set once the person signed in.
    pub tenant: Option<String>,
    pub member: Option<String>,
    pub expires_at: i64,
}

impl Ticket {
    pub fn new(request: &AuthorizationRequest, now: i64) -> Ticket {
        Ticket {
            client_id: request.client_id.clone(),
            client_name: request.client_name.clone(),
            redirect_uri: request.redirect_uri.clone(),
            code_challenge: request.challenge.as_str().to_owned(),
            state: request.state.clone(),
            scope: request.scope.clone(),
            resource: request.resource.clone(),
            tenant: None,
            member: None,
            expires_at: now + FORM_TTL_MS,
        }
    }

    /// The request it carries, for the code's issue or a redirect.
    pub fn request(&self) -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: self.client_id.clone(),
            client_name: self.client_name.clone(),
            redirect_uri: self.redirect_uri.clone(),
            challenge: Challenge::from_stored(self.code_challenge.clone()),
            state: self.state.clone(),
            scope: self.scope.clone(),
            resource: self.resource.clone(),
        }
    }

    /// `<payload>.<mac>`, bound to the browser's binding.
    pub fn seal(&self, secret: &[u8], binding: &str) -> String {
        let payload = b64url_encode(
            serde_json::to_string(self)
                .expect("a ticket serialises")
                .as_bytes(),
        );
        let tag = mac(
            secret,
            &[TICKET_DOMAIN, binding.as_bytes(), payload.as_bytes()],
        );
        format!("{payload}.{}", b64url_encode(&tag))
    }

    pub fn open(
        secret: &[u8],
        binding: &str,
        sealed: Option<&str>,
        now: i64,
    ) -> Result<Ticket, FormError> {
        let (payload, tag) = sealed
            .and_then(|s| s.split_once('.'))
            .ok_or(FormError::BadTicket)?;
        let expected = mac(
            secret,
            &[TICKET_DOMAIN, binding.as_bytes(), payload.as_bytes()],
        );
        let given = b64url_decode(tag).ok_or(FormError::BadTicket)?;
        if !constant_time_eq(&given, &expected) {
            return Err(FormError::BadTicket);
        }
        let ticket: Ticket = b64url_decode(payload)
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(FormError::BadTicket)?;
        if now >= ticket.expires_at {
            return Err(FormError::Expired);
        }
        Ok(ticket)
    }
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}.error{background:#fdecea;border:1px solid #f5c2c0;padding:.75rem;border-radius:4px}.muted{color:#666;font-size:.9rem}input[type=text],input[type=password]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}button{padding:.5rem 1rem;font:inherit;margin:.5rem .5rem 0 0}code{word-break:break-all}";

/// The headers every page is sent with. `form_target` is the origin (or private-use scheme)
/// the page's form may end up redirecting to (Chrome applies `form-action` to the redirect
/// after a form post, so the consent page names the client's redirect origin).
pub fn headers(form_target: Option<&str>) -> Vec<(&'static str, String)> {
    let mut form_action = "'self'".to_owned();
    if let Some(target) = form_target {
        form_action.push(' ');
        form_action.push_str(target);
    }
    vec![
        ("Content-Type", "text/html; charset=utf-8".to_owned()),
        (
            "Content-Security-Policy",
            format!(
                "default-src 'none'; style-src 'sha256-{}'; img-src 'none'; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'",
                b64_encode_standard(&sha256(STYLE.as_bytes()))
            ),
        ),
        ("X-Content-Type-Options", "nosniff".to_owned()),
        ("X-Frame-Options", "DENY".to_owned()),
        ("Referrer-Policy", "no-referrer".to_owned()),
        ("Cache-Control", "no-store".to_owned()),
        ("Pragma", "no-cache".to_owned()),
        ("Cross-Origin-Opener-Policy", "same-origin".to_owned()),
    ]
}

/// The CSP source for where a redirect URI sends the browser: its origin, or `scheme:` for a
/// native app's private-use scheme. Only checked redirect URIs come here.
pub fn redirect_source(redirect_uri: &str) -> String {
    let Some((scheme, rest)) = redirect_uri.split_once(':') else {
        return "'none'".to_owned();
    };
    match rest.strip_prefix("//") {
        Some(after) if scheme == "http" || scheme == "https" => {
            let authority = &after[..after.find(['/', '?']).unwrap_or(after.len())];
            format!("{scheme}://{authority}")
        }
        _ => format!("{scheme}:"),
    }
}

/// A whole page around `body` (which the caller has escaped), with the one stylesheet the CSP
/// allows.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>{} · floorgate</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    )
}

/// A hidden form field, escaped.
pub fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
        escape(name),
        escape(value)
    )
}

/// The host a URL names, for "this app will return you to …".
fn host_of(url: &str) -> &str {
    url.split_once("://")
        .map(|(_, rest)| &rest[..rest.find(['/', '?']).unwrap_or(rest.len())])
        .unwrap_or(url)
}

/// How a page names a client's identity: a metadata document's URL (its host vouches for the
/// name), or, for a client registered here, that its name is only what it says of itself —
/// the sealed id itself would mean nothing to a person.
fn client_identity(client_id: &str) -> String {
    if client_id.starts_with(super::client::REGISTERED_PREFIX) {
        "a client registered with this gateway; its name is what it says about itself".to_owned()
    } else {
        format!("<code>{}</code>", escape(client_id))
    }
}

/// What the sign-in page shows.
pub struct SignInPage<'a> {
    pub client_name: &'a str,
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub ticket: &'a str,
    pub csrf: &'a str,
    /// Why the last attempt failed (expired code, unknown code…), shown above the form.
    pub error: Option<&'a str>,
}

/// The sign-in page: a one-time sign-in code (or an existing grant) proves membership.
pub fn sign_in(p: &SignInPage<'_>) -> String {
    let error = p
        .error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "<h1>Sign in to connect {client}</h1>{error}\
<p><strong>{client}</strong> ({client_id}) asks to use floorgate on your behalf. It will return you to <code>{redirect_host}</code>.</p>\
<form method=\"post\" action=\"{action}\">{ticket}{csrf}\
<label for=\"code\">Sign-in code from your administrator, or your floorgate grant</label>\
<input type=\"password\" id=\"code\" name=\"{field_code}\" autocomplete=\"off\" required autofocus>\
<button type=\"submit\">Continue</button></form>\
<p class=\"muted\">A sign-in code starts with <code>fgs1.</code> and works once, for 15 minutes. If you did not start this from an application you use, close this page.</p>",
        client = escape(p.client_name),
        client_id = client_identity(p.client_id),
        redirect_host = escape(host_of(p.redirect_uri)),
        action = AUTHORIZE_PATH,
        ticket = hidden(FIELD_TICKET, p.ticket),
        csrf = hidden(FIELD_CSRF, p.csrf),
        field_code = FIELD_CODE,
    );
    page("Sign in", &body)
}

/// What the consent page shows.
pub struct ConsentPage<'a> {
    pub client_name: &'a str,
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub tenant: &'a str,
    pub member: &'a str,
    /// What the member's access reaches (the connectors or connections they can use).
    pub reaches: &'a [String],
    pub ticket: &'a str,
    pub csrf: &'a str,
}

/// The consent page: who, for which tenant, which client, what it reaches; allow or deny.
pub fn consent(p: &ConsentPage<'_>) -> String {
    let reaches = if p.reaches.is_empty() {
        "<p>Your access does not reach any connected tool yet; the application will see floorgate's own operations.</p>".to_owned()
    } else {
        let items: String = p
            .reaches
            .iter()
            .map(|r| format!("<li>{}</li>", escape(r)))
            .collect();
        format!("<p>It will reach what your membership allows:</p><ul>{items}</ul>")
    };
    let body = format!(
        "<h1>Allow {client} to use floorgate?</h1>\
<p>Signed in as <strong>{member}</strong> in <strong>{tenant}</strong>.</p>\
<p><strong>{client}</strong> ({client_id}) will act as you, with your permissions, until you revoke it or your membership ends.</p>{reaches}\
<p>After you answer you go back to <code>{redirect_host}</code>.</p>\
<form method=\"post\" action=\"{action}\">{ticket}{csrf}\
<button type=\"submit\" name=\"{decision}\" value=\"{allow}\">Allow</button>\
<button type=\"submit\" name=\"{decision}\" value=\"{deny}\">Deny</button></form>",
        client = escape(p.client_name),
        client_id = client_identity(p.client_id),
        member = escape(p.member),
        tenant = escape(p.tenant),
        redirect_host = escape(host_of(p.redirect_uri)),
        action = AUTHORIZE_PATH,
        ticket = hidden(FIELD_TICKET, p.ticket),
        csrf = hidden(FIELD_CSRF, p.csrf),
        decision = FIELD_DECISION,
        allow = DECISION_ALLOW,
        deny = DECISION_DENY,
    );
    page("Allow access", &body)
}

/// An error in a request whose return address is known: said on the page, with a link back to
/// the application that the person follows or not. Never an automatic redirect: anyone can
/// register a client, so a redirect before the person acts would make the gateway an open
/// redirector (RFC 9700 §4.11.2).
pub fn error_with_return(message: &str, location: &str) -> String {
    page(
        "Sign-in stopped",
        &format!(
            "<h1>Sign-in stopped</h1><p class=\"error\" role=\"alert\">{}</p>\
<p class=\"muted\">The application that sent you here can be told: <a href=\"{}\">return to {}</a>. If you did not start this, close this page.</p>",
            escape(message),
            escape(location),
            escape(host_of(location)),
        ),
    )
}

/// An error page: what went wrong and what to do, nothing redirected.
pub fn error(message: &str) -> String {
    page(
        "Sign-in stopped",
        &format!(
            "<h1>Sign-in stopped</h1><p class=\"error\" role=\"alert\">{}</p>",
            escape(message)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_client_is_named_as_self_described() {
        let page = sign_in(&SignInPage {
            client_name: "Claude",
            client_id: "fgdc1.eyJuIjoiQ2xhdWRlIn0.c2VhbA",
            redirect_uri: "https://claude.ai/api/mcp/auth_callback",
            ticket: "t",
            csrf: "c",
            error: None,
        });
        assert!(page.contains("its name is what it says about itself"));
        assert!(
            !page.contains("fgdc1."),
            "the sealed id means nothing to a person"
        );
        let page = sign_in(&SignInPage {
            client_id: "https://app.example.com/c.json",
            ..SignInPage {
                client_name: "App",
                client_id: "",
                redirect_uri: "https://app.example.com/cb",
                ticket: "t",
                csrf: "c",
                error: None,
            }
        });
        assert!(page.contains("<code>https://app.example.com/c.json</code>"));
    }
    use crate::oauth::pkce::challenge_of;

    const SECRET: &[u8] = b"a deployment secret of enough length";
    const HOSTILE: &str = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>&amp;";

    fn request() -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: "https://app.example.com/c.json".into(),
            client_name: "Example".into(),
            redirect_uri: "https://app.example.com/cb".into(),
            challenge: Challenge::from_stored(challenge_of(&"v".repeat(43))),
            state: Some("s".into()),
            scope: "mcp".into(),
            resource: "https://gate.example.com/mcp".into(),
        }
    }

    /// Every `<` in the page belongs to the template: the hostile text appears only escaped.
    fn assert_escaped(html: &str) {
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("\"'>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img"));
        assert!(html.contains("&amp;amp;"));
    }

    #[test]
    fn escaping_covers_content_and_both_quotes() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(escape("plain é"), "plain é");
    }

    #[test]
    fn every_page_escapes_hostile_input() {
        let reaches = vec![HOSTILE.to_owned(), "Notion (eng)".to_owned()];
        let pages = [
            sign_in(&SignInPage {
                client_name: HOSTILE,
                client_id: HOSTILE,
                redirect_uri: &format!("https://{HOSTILE}/cb"),
                ticket: HOSTILE,
                csrf: HOSTILE,
                error: Some(HOSTILE),
            }),
            consent(&ConsentPage {
                client_name: HOSTILE,
                client_id: HOSTILE,
                redirect_uri: HOSTILE,
                tenant: HOSTILE,
                member: HOSTILE,
                reaches: &reaches,
                ticket: HOSTILE,
                csrf: HOSTILE,
            }),
            error(HOSTILE),
        ];
        for html in &pages {
            assert_escaped(html);
            assert!(!html.contains("<script"));
        }
        assert!(pages[1].contains("<li>Notion (eng)</li>"));
    }

    #[test]
    fn every_form_carries_csrf_and_ticket_fields() {
        let sign = sign_in(&SignInPage {
            client_name: "Example",
            client_id: "https://app.example.com/c.json",
            redirect_uri: "https://app.example.com/cb",
            ticket: "T",
            csrf: "C",
            error: None,
        });
        let grant = consent(&ConsentPage {
            client_name: "Example",
            client_id: "https://app.example.com/c.json",
            redirect_uri: "https://app.example.com/cb",
            tenant: "acme",
            member: "ada",
            reaches: &[],
            ticket: "T",
            csrf: "C",
        });
        for html in [&sign, &grant] {
            assert_eq!(html.matches("<form ").count(), 1);
            assert!(html.contains("<input type=\"hidden\" name=\"csrf\" value=\"C\">"));
            assert!(html.contains("<input type=\"hidden\" name=\"ticket\" value=\"T\">"));
            assert!(html.contains("method=\"post\" action=\"/authorize\""));
        }
        assert!(sign.contains("name=\"code\""));
        assert!(sign.contains("app.example.com"));
        assert!(grant.contains("value=\"allow\"") && grant.contains("value=\"deny\""));
        assert!(grant.contains("<strong>ada</strong> in <strong>acme</strong>"));
    }

    #[test]
    fn csrf_tokens_verify_only_for_their_browser_form_and_time() {
        let t = csrf_token(SECRET, "binding-a", Form::SignIn, 1000);
        assert_eq!(
            verify_csrf(SECRET, Some("binding-a"), Some(&t), Form::SignIn, 2000),
            Ok(())
        );
        for (binding, token, form, now, want) in [
            (
                Some("binding-b"),
                Some(t.as_str()),
                Form::SignIn,
                2000,
                FormError::Csrf,
            ),
            (None, Some(t.as_str()), Form::SignIn, 2000, FormError::Csrf),
            (
                Some(""),
                Some(t.as_str()),
                Form::SignIn,
                2000,
                FormError::Csrf,
            ),
            (Some("binding-a"), None, Form::SignIn, 2000, FormError::Csrf),
            (
                Some("binding-a"),
                Some(t.as_str()),
                Form::Consent,
                2000,
                FormError::Csrf,
            ),
            (
                Some("binding-a"),
                Some("1000.AAAA"),
                Form::SignIn,
                2000,
                FormError::Csrf,
            ),
            (
                Some("binding-a"),
                Some("garbage"),
                Form::SignIn,
                2000,
                FormError::Csrf,
            ),
            (
                Some("binding-a"),
                Some(t.as_str()),
                Form::SignIn,
                1000 + FORM_TTL_MS,
                FormError::Expired,
            ),
            (
                Some("binding-a"),
                Some(t.as_str()),
                Form::SignIn,
                999,
                FormError::Expired,
            ),
        ] {
            assert_eq!(
                verify_csrf(SECRET, binding, token, form, now),
                Err(want.clone()),
                "{binding:?} {token:?} {form:?} {now}"
            );
        }
        // A forged time with the old tag fails; another secret fails.
        let (_, tag) = t.split_once('.').unwrap();
        let moved = format!("5000.{tag}");
        assert_eq!(
            verify_csrf(SECRET, Some("binding-a"), Some(&moved), Form::SignIn, 6000),
            Err(FormError::Csrf)
        );
        assert_eq!(
            verify_csrf(
                b"another secret",
                Some("binding-a"),
                Some(&t),
                Form::SignIn,
                2000
            ),
            Err(FormError::Csrf)
        );
    }

    #[test]
    fn tickets_are_sealed_to_their_browser_and_expire() {
        let mut ticket = Ticket::new(&request(), 1000);
        ticket.tenant = Some("acme".into());
        ticket.member = Some("ada".into());
        let sealed = ticket.seal(SECRET, "binding-a");
        assert_eq!(
            Ticket::open(SECRET, "binding-a", Some(&sealed), 2000),
            Ok(ticket.clone())
        );
        assert_eq!(
            Ticket::open(SECRET, "binding-a", Some(&sealed), 2000)
                .unwrap()
                .request(),
            request()
        );
        assert_eq!(
            Ticket::open(SECRET, "binding-b", Some(&sealed), 2000),
            Err(FormError::BadTicket)
        );
        assert_eq!(
            Ticket::open(SECRET, "binding-a", None, 2000),
            Err(FormError::BadTicket)
        );
        assert_eq!(
            Ticket::open(SECRET, "binding-a", Some(&sealed), 1000 + FORM_TTL_MS),
            Err(FormError::Expired)
        );
        // Changing the member inside the payload breaks the seal.
        let (_, tag) = sealed.split_once('.').unwrap();
        let mut forged = ticket.clone();
        forged.member = Some("root".into());
        let forged_payload = b64url_encode(serde_json::to_string(&forged).unwrap().as_bytes());
        assert_eq!(
            Ticket::open(
                SECRET,
                "binding-a",
                Some(&format!("{forged_payload}.{tag}")),
                2000
            ),
            Err(FormError::BadTicket)
        );
    }

    #[test]
    fn page_headers_forbid_framing_sniffing_referrers_caching_and_script() {
        let headers = headers(Some(&redirect_source(
            "https://claude.ai/api/mcp/auth_callback",
        )));
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        let csp = get("Content-Security-Policy");
        assert!(csp.contains("frame-ancestors 'none'"));
        assert!(csp.starts_with("default-src 'none'"));
        assert!(!csp.contains("script-src") && !csp.contains("unsafe-inline"));
        assert!(csp.contains("form-action 'self' https://claude.ai;"));
        let hash = b64_encode_standard(&sha256(STYLE.as_bytes()));
        assert!(csp.contains(&format!("style-src 'sha256-{hash}'")));
        assert!(hash.ends_with('=') && hash.len() == 44);
        assert_eq!(get("X-Content-Type-Options"), "nosniff");
        assert_eq!(get("Referrer-Policy"), "no-referrer");
        assert_eq!(get("Cache-Control"), "no-store");
        assert_eq!(
            redirect_source("http://127.0.0.1:5000/cb?x"),
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            redirect_source("cursor://anysphere.cursor-retrieval/cb"),
            "cursor:"
        );
        assert_eq!(redirect_source("com.example.app:/cb"), "com.example.app:");
        assert!(binding_cookie("abc")
            .starts_with("__Host-floorgate-csrf=abc; Path=/; Secure; HttpOnly"));
        assert_eq!(new_binding(&[0; BINDING_BYTES]).len(), 43);
    }
}
