//! The referee's engine mode ([`crate::referee::Referee::start_engine`]): enough of a Docker
//! Engine for agentc's API backend to launch, list and remove containers against it, so that
//! tests see every request agentc makes (which connection it came on, when it arrived) and can
//! make chosen steps fail.
//!
//! It keeps containers and volumes in memory: `GET /version` (answered by the referee, with
//! its API version), `GET /images/{name}/json` (200 unless the image is
//! marked missing), `GET /volumes/{name}`, `POST /volumes/create`, `POST /containers/create`
//! (409 on a name in use), `POST /containers/{id}/start`, `GET /containers/{id}/json`,
//! `GET /containers/json` (with a `label` filter), `POST /containers/{id}/kill` and
//! `DELETE /containers/{id}`. Containers are found by ID, ID prefix or name, as the daemon
//! finds them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

/// What the stand-in engine is told to do differently.
#[derive(Debug, Default, Clone)]
pub struct Faults {
    /// Images it has not got: their inspect answers 404 "No such image".
    pub missing_images: BTreeSet<String>,
    /// Container names whose create answers 500.
    pub fail_create: BTreeSet<String>,
    /// Container names whose start answers 500.
    pub fail_start: BTreeSet<String>,
    /// How long each create takes, so that concurrent creates overlap.
    pub create_delay: Duration,
    /// How long each removal takes, so that concurrent removals overlap.
    pub remove_delay: Duration,
}

#[derive(Debug, Clone)]
struct Container {
    id: String,
    name: String,
    image: String,
    labels: BTreeMap<String, String>,
    running: bool,
}

/// The engine's state.
#[derive(Debug, Default)]
pub struct Engine {
    containers: Mutex<Vec<Container>>,
    volumes: Mutex<BTreeSet<String>>,
    faults: Mutex<Faults>,
    creating: AtomicUsize,
    most_creating: AtomicUsize,
    removing: AtomicUsize,
    most_removing: AtomicUsize,
}

/// One answer: status, reason phrase, JSON body (empty for 204).
pub type Answer = (u16, &'static str, String);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn message(status: u16, reason: &'static str, text: &str) -> Answer {
    (status, reason, json!({ "message": text }).to_string())
}

impl Engine {
    /// Replaces the faults.
    pub fn set_faults(&self, faults: Faults) {
        *lock(&self.faults) = faults;
    }

    /// Forgets every container and volume.
    pub fn clear(&self) {
        lock(&self.containers).clear();
        lock(&self.volumes).clear();
    }

    /// The names of the containers it holds, sorted.
    pub fn container_names(&self) -> Vec<String> {
        let mut names: Vec<String> = lock(&self.containers)
            .iter()
            .map(|container| container.name.clone())
            .collect();
        names.sort();
        names
    }

    /// The most creates that were in progress at once.
    pub fn most_concurrent_creates(&self) -> usize {
        self.most_creating.load(Ordering::SeqCst)
    }

    /// The most removals that were in progress at once.
    pub fn most_concurrent_removals(&self) -> usize {
        self.most_removing.load(Ordering::SeqCst)
    }

    /// Answers one request (`path` without the version prefix).
    pub fn answer(
        &self,
        method: &str,
        path: &str,
        query: &BTreeMap<String, String>,
        body: &[u8],
        id: impl FnOnce() -> String,
    ) -> Answer {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method, segments.as_slice()) {
            ("GET", ["images", .., "json"]) => {
                let image = path
                    .trim_start_matches("/images/")
                    .trim_end_matches("/json");
                if lock(&self.faults).missing_images.contains(image) {
                    return message(404, "Not Found", &format!("No such image: {image}"));
                }
                let inspect = json!({
                    "Id": format!("sha256:{:064x}", image.len()),
                    "RepoTags": [image],
                });
                (200, "OK", inspect.to_string())
            }
            ("GET", ["volumes", name]) => {
                if lock(&self.volumes).contains(*name) {
                    (200, "OK", json!({ "Name": name }).to_string())
                } else {
                    message(404, "Not Found", &format!("get {name}: no such volume"))
                }
            }
            ("POST", ["volumes", "create"]) => {
                let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let name = request["Name"].as_str().unwrap_or_default().to_string();
                lock(&self.volumes).insert(name.clone());
                (201, "Created", json!({ "Name": name }).to_string())
            }
            ("POST", ["containers", "create"]) => self.create(query, body, id),
            ("POST", ["containers", key, "start"]) => {
                let fail = lock(&self.faults).fail_start.clone();
                let mut containers = lock(&self.containers);
                match find(&mut containers, key) {
                    Some(container) if fail.contains(&container.name) => {
                        message(500, "Internal Server Error", "injected start failure")
                    }
                    Some(container) => {
                        container.running = true;
                        (204, "No Content", String::new())
                    }
                    None => no_such_container(key),
                }
            }
            ("POST", ["containers", key, "kill"]) => {
                let mut containers = lock(&self.containers);
                match find(&mut containers, key) {
                    Some(container) if container.running => {
                        container.running = false;
                        (204, "No Content", String::new())
                    }
                    Some(container) => message(
                        409,
                        "Conflict",
                        &format!("Container {} is not running", container.id),
                    ),
                    None => no_such_container(key),
                }
            }
            ("GET", ["containers", "json"]) => (200, "OK", self.list(query).to_string()),
            // It makes no networks (no launch of its tests has an egress companion).
            ("GET", ["networks"]) => (200, "OK", "[]".to_string()),
            // Nor volumes of an egress proxy (its CA volume).
            ("GET", ["volumes"]) => (200, "OK", "{\"Volumes\":[],\"Warnings\":[]}".to_string()),
            ("GET", ["containers", key, "json"]) => {
                let mut containers = lock(&self.containers);
                match find(&mut containers, key) {
                    Some(container) => (200, "OK", inspect(container).to_string()),
                    None => no_such_container(key),
                }
            }
            ("DELETE", ["containers", key]) => {
                let now = self.removing.fetch_add(1, Ordering::SeqCst) + 1;
                self.most_removing.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(lock(&self.faults).remove_delay);
                self.removing.fetch_sub(1, Ordering::SeqCst);
                let mut containers = lock(&self.containers);
                let before = containers.len();
                let found = find(&mut containers, key).map(|container| container.id.clone());
                containers.retain(|container| Some(&container.id) != found.as_ref());
                if containers.len() < before {
                    (204, "No Content", String::new())
                } else {
                    no_such_container(key)
                }
            }
            _ => message(404, "Not Found", "not implemented by the referee"),
        }
    }

    fn create(
        &self,
        query: &BTreeMap<String, String>,
        body: &[u8],
        id: impl FnOnce() -> String,
    ) -> Answer {
        let now = self.creating.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_creating.fetch_max(now, Ordering::SeqCst);
        let faults = lock(&self.faults).clone();
        std::thread::sleep(faults.create_delay);
        self.creating.fetch_sub(1, Ordering::SeqCst);
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let name = query.get("name").cloned().unwrap_or_default();
        if faults.fail_create.contains(&name) {
            return message(500, "Internal Server Error", "injected create failure");
        }
        let mut containers = lock(&self.containers);
        if !name.is_empty() && containers.iter().any(|container| container.name == name) {
            return message(
                409,
                "Conflict",
                &format!("Conflict. The container name \"/{name}\" is already in use"),
            );
        }
        let id = id();
        let labels = request["Labels"]
            .as_object()
            .map(|labels| {
                labels
                    .iter()
                    .map(|(key, value)| (key.clone(), value.as_str().unwrap_or_default().into()))
                    .collect()
            })
            .unwrap_or_default();
        containers.push(Container {
            id: id.clone(),
            name: if name.is_empty() {
                format!("stand-in-{}", &id[56..])
            } else {
                name
            },
            image: request["Image"].as_str().unwrap_or_default().to_string(),
            labels,
            running: false,
        });
        (
            201,
            "Created",
            json!({ "Id": id, "Warnings": [] }).to_string(),
        )
    }

    fn list(&self, query: &BTreeMap<String, String>) -> Value {
        let filters: Value = query
            .get("filters")
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null);
        let labels: Vec<&str> = match &filters["label"] {
            Value::Array(values) => values.iter().filter_map(Value::as_str).collect(),
            Value::Object(map) => map.keys().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        let all = query
            .get("all")
            .is_some_and(|value| value == "true" || value == "1");
        let containers = lock(&self.containers);
        let listed: Vec<Value> = containers
            .iter()
            .filter(|container| all || container.running)
            .filter(|container| {
                labels.iter().all(|filter| match filter.split_once('=') {
                    Some((key, value)) => container.labels.get(key).is_some_and(|v| v == value),
                    None => container.labels.contains_key(*filter),
                })
            })
            .map(|container| {
                json!({
                    "Id": container.id,
                    "Names": [format!("/{}", container.name)],
                    "Image": container.image,
                    "Labels": container.labels,
                    "State": if container.running { "running" } else { "created" },
                    "Status": if container.running { "Up 1 second" } else { "Created" },
                })
            })
            .collect();
        Value::Array(listed)
    }
}

fn find<'a>(containers: &'a mut [Container], key: &str) -> Option<&'a mut Container> {
    let index = containers
        .iter()
        .position(|container| container.id == key || container.name == key)
        .or_else(|| {
            containers
                .iter()
                .position(|container| key.len() >= 4 && container.id.starts_with(key))
        })?;
    containers.get_mut(index)
}

fn no_such_container(key: &str) -> Answer {
    message(404, "Not Found", &format!("No such container: {key}"))
}

fn inspect(container: &Container) -> Value {
    json!({
        "Id": container.id,
        "Name": format!("/{}", container.name),
        "Image": container.image,
        "Config": { "Image": container.image, "Labels": container.labels },
        "State": { "Status": if container.running { "running" } else { "created" },
                   "Running": container.running },
        "NetworkSettings": { "Ports": {}, "Networks": {} },
    })
}
