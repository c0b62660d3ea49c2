//! OpenCode's per-run configuration (`AGENT_OPENCODE_CONFIG_JSON`): compact JSON with ordered
//! keys, byte for byte as agent-containers renders it with Python's `json.dumps`.

use crate::profile::Profile;
use crate::text::trim_url;

/// A JSON value with ordered keys, rendered like Python's compact `json.dumps`.
enum Json {
    Str(String),
    Bool(bool),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn render(&self, out: &mut String) {
        match self {
            Json::Str(text) => json_string(text, out),
            Json::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Json::Arr(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.render(out);
                }
                out.push(']');
            }
            Json::Obj(entries) => {
                out.push('{');
                for (index, (key, value)) in entries.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    json_string(key, out);
                    out.push(':');
                    value.render(out);
                }
                out.push('}');
            }
        }
    }
}

/// Python's `json.dumps` string escaping with `ensure_ascii`.
fn json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The secret-free, per-run OpenCode configuration (`docker.py`'s `_opencode_config`), as
/// compact JSON with ordered keys.
pub(crate) fn config(profile: &Profile) -> String {
    let mut document = vec![(
        "$schema".to_string(),
        Json::Str("https://opencode.ai/config.json".to_string()),
    )];
    if let Some(provider) = &profile.provider {
        let mut options = Vec::new();
        if let Some(endpoint) = &provider.endpoint {
            options.push(("baseURL".to_string(), Json::Str(trim_url(endpoint))));
        }
        if let Some(name) = &provider.api_key_env {
            options.push(("apiKey".to_string(), Json::Str(format!("{{env:{name}}}"))));
        }
        let mut models = Vec::new();
        if let Some(model) = &provider.model {
            models.push((
                model.clone(),
                Json::Obj(vec![("name".to_string(), Json::Str(model.clone()))]),
            ));
            document.push((
                "model".to_string(),
                Json::Str(format!("agent_containers/{model}")),
            ));
        }
        let provider_config = Json::Obj(vec![
            (
                "npm".to_string(),
                Json::Str("@ai-sdk/openai-compatible".to_string()),
            ),
            ("name".to_string(), Json::Str(provider.kind.clone())),
            ("options".to_string(), Json::Obj(options)),
            ("models".to_string(), Json::Obj(models)),
        ]);
        document.push((
            "provider".to_string(),
            Json::Obj(vec![("agent_containers".to_string(), provider_config)]),
        ));
    }
    if profile.langfuse.enabled {
        document.push((
            "experimental".to_string(),
            Json::Obj(vec![("openTelemetry".to_string(), Json::Bool(true))]),
        ));
        document.push((
            "plugin".to_string(),
            Json::Arr(vec![Json::Str(
                "@langfuse/opencode-observability-plugin@latest".to_string(),
            )]),
        ));
    }
    let mut out = String::new();
    Json::Obj(document).render(&mut out);
    out
}
