// Checks one rendered kustomization of deploy/k8s (the YAML `kubectl kustomize` prints):
//   1. every object against the Kubernetes API schema (kubernetes-models' validate():
//      types, required fields, enums) plus no field the schema does not know (a typo such
//      as `livenessprobe` would otherwise pass: the fields validate() never reads);
//   2. what benchfleet needs of it: benchd's and bench-agent's flags exist (their --help),
//      every $(VAR) in args is defined, files named by flags are mounted (certificates and
//      tokens read-only from Secrets, the database on the PersistentVolumeClaim), the probes
//      on /healthz and /readyz of --http's port, Prometheus annotations, the Service, the
//      images deploy/compose builds, and the agent's /dev/shm (memory), node name (downward API), address, spool and, for --expect
//      gpu, its GPU limit, toleration and node selector (--expect cpu: CPU slots, no GPU);
//   3. that no agent is given a key (issue 24): a secured agent bootstraps with a join token
//      (--join-token-file, no --tls-cert/--tls-key), every Secret its pod mounts lists its
//      items and none is a key, none is a Secret benchd mounts, and benchd signs with
//      --agent-signing-cert/-key from a Secret.
// Prints every problem found (object and field named) and exits 1 if there is one.
//
//   node check_manifests.mjs --expect gpu|cpu --help benchd=FILE --help bench-agent=FILE RENDERED.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

function usage(message) {
  console.error(`check_manifests: ${message}\n` +
    "usage: node check_manifests.mjs --expect gpu|cpu --help benchd=FILE --help bench-agent=FILE RENDERED.yaml");
  process.exit(2);
}

const args = process.argv.slice(2);
let expect = "";
let renderedPath = "";
const helpTexts = new Map();  // program -> its --help text
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--expect") {
    expect = args[++i] ?? "";
  } else if (args[i] === "--help") {
    const [program, file] = (args[++i] ?? "").split("=");
    if (!program || !file) usage(`--help wants PROGRAM=FILE, got '${args[i]}'`);
    helpTexts.set(program, readFileSync(file, "utf8"));
  } else if (!renderedPath) {
    renderedPath = args[i];
  } else {
    usage(`unexpected argument '${args[i]}'`);
  }
}
if (expect !== "gpu" && expect !== "cpu") usage(`--expect must be gpu or cpu, got '${expect}'`);
if (!renderedPath) usage("no rendered YAML file given");
for (const program of ["benchd", "bench-agent"]) {
  if (!helpTexts.has(program)) usage(`no --help ${program}=FILE given`);
  if (!/--controller|--listen/.test(helpTexts.get(program))) {
    usage(`the --help text given for ${program} lists none of its flags`);
  }
}

const problems = [];
const problem = (where, message) => problems.push(`${where}: ${message}`);

const documents = parseAllDocuments(readFileSync(renderedPath, "utf8"));
const objects = [];
for (const doc of documents) {
  if (doc.errors.length) {
    problem(renderedPath, `YAML: ${doc.errors[0].message}`);
    continue;
  }
  const object = doc.toJS();
  if (object !== null) objects.push(object);
}
if (objects.length === 0) problem(renderedPath, "no objects rendered");
const nameOf = (o) => `${o?.kind ?? "?"}/${o?.metadata?.name ?? "?"}`;

// --- 1. The API schema -----------------------------------------------------------------

// A proxy that records the path of every own property read through it.
function tracked(value, path, seen) {
  if (value === null || typeof value !== "object") return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof key !== "string" || !Object.prototype.hasOwnProperty.call(target, key)) return v;
      seen.add(`${path}/${key}`);
      return tracked(v, `${path}/${key}`, seen);
    },
  });
}
function unreadFields(value, path, seen, out) {
  if (value === null || typeof value !== "object") return;
  for (const key of Object.keys(value)) {
    const p = `${path}/${key}`;
    if (!seen.has(p)) out.push(p);
    else unreadFields(value[key], p, seen, out);
  }
}

async function modelClass(object) {
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[A-Z][A-Za-z]+$/.test(kind)) {
    return null;
  }
  try {
    const module = await import(`kubernetes-models/${apiVersion}/${kind}`);
    return module[kind] ?? null;
  } catch {
    return null;
  }
}

for (const object of objects) {
  const Model = await modelClass(object);
  if (!Model) {
    problem(nameOf(object), `no Kubernetes API kind ${object.apiVersion} ${object.kind}`);
    continue;
  }
  const model = new Model(object);
  const seen = new Set();
  try {
    tracked(model, "", seen).validate();
  } catch (error) {
    problem(nameOf(object), `schema: ${error.message}`);
    continue;
  }
  const unknown = [];
  unreadFields(object, "", seen, unknown);
  for (const path of unknown) problem(nameOf(object), `schema: unknown field ${path}`);
}

// --- 2. What benchfleet needs ----------------------------------------------------------

const byKind = (kind) => objects.filter((o) => o.kind === kind);
const podSpecOf = (o) => o.spec?.template?.spec ?? {};
function containersRunning(program) {
  const found = [];
  for (const o of objects) {
    for (const c of podSpecOf(o).containers ?? []) {
      if ((c.command ?? [])[0] === program) found.push({ owner: o, container: c });
    }
  }
  return found;
}

// Flags as `--name=value` items (one item each, so that a reader sees the pairs).
function flagsOf(container) {
  const flags = new Map();
  for (const arg of container.args ?? []) {
    const match = /^--([A-Za-z0-9_-]+)(?:=(.*))?$/.exec(arg);
    if (!match) continue;
    flags.set(match[1], match[2] ?? "");
  }
  return flags;
}
const normalized = (flag) => flag.replaceAll("_", "-");
function checkFlagsExist(where, program, container) {
  const known = new Set([...helpTexts.get(program).matchAll(/--([A-Za-z0-9_-]+)/g)].map((m) => normalized(m[1])));
  for (const arg of container.args ?? []) {
    if (!arg.startsWith("--")) {
      problem(where, `argument '${arg}' is not a --flag=value item`);
      continue;
    }
    const name = arg.slice(2).split("=")[0];
    if (!known.has(normalized(name))) problem(where, `${program} has no flag --${name} (see ${program} --help)`);
  }
}
function envOf(container) {
  return new Map((container.env ?? []).map((e) => [e.name, e]));
}
function fieldRefOf(container, variable) {
  return envOf(container).get(variable)?.valueFrom?.fieldRef?.fieldPath ?? "";
}
function checkVariablesDefined(where, container) {
  const env = envOf(container);
  for (const arg of container.args ?? []) {
    for (const match of arg.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
      if (!env.has(match[1])) problem(where, `'${arg}' uses $(${match[1]}), which the container's env does not define`);
    }
  }
}
// The volume mounted at the longest mountPath holding `path`, with its volume.
function mountHolding(owner, container, path) {
  let best = null;
  for (const mount of container.volumeMounts ?? []) {
    const dir = mount.mountPath.replace(/\/$/, "");
    if ((path === dir || path.startsWith(dir + "/")) && (!best || dir.length > best.mount.mountPath.length)) {
      best = { mount };
    }
  }
  if (!best) return null;
  const name = best.mount.name;
  best.volume = (podSpecOf(owner).volumes ?? []).find((v) => v.name === name) ?? null;
  best.claim = (owner.spec?.volumeClaimTemplates ?? []).find((t) => t.metadata?.name === name) ?? null;
  return best;
}
function checkSecretFile(where, owner, container, flag, path) {
  const held = mountHolding(owner, container, path);
  if (!held) return problem(where, `--${flag}=${path} is on no volume mount`);
  if (!held.volume?.secret) problem(where, `--${flag}=${path} is not from a Secret volume`);
  if (held.mount.readOnly !== true) problem(where, `--${flag}=${path}: its mount ${held.mount.mountPath} is not readOnly`);
}
function quantityBytes(text) {
  const match = /^([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(text ?? ""));
  if (!match) return NaN;
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[match[2]] ?? 1;
  return Number(match[1]) * unit;
}
function portOf(address) {
  return Number(/:(\d+)$/.exec(address ?? "")?.[1] ?? NaN);
}
function containerPortNumber(container, port) {
  if (typeof port === "number") return port;
  return (container.ports ?? []).find((p) => p.name === port)?.containerPort ?? NaN;
}

// The images deploy/compose builds: benchfleet (Dockerfile), benchfleet-gpu (Dockerfile.gpu),
// under any registry and tag.
function checkImage(where, container, name) {
  const repository = String(container.image ?? "").replace(/@.*$/, "").replace(/:[^/:]*$/, "");
  if (repository.split("/").pop() !== name) {
    problem(where, `image ${container.image} is not deploy/compose's ${name} (REGISTRY/${name}:TAG)`);
  }
}

// Namespace: one, declared.
const namespaces = new Set(objects.filter((o) => o.kind !== "Namespace").map((o) => o.metadata?.namespace));
if (namespaces.size !== 1 || namespaces.has(undefined)) {
  problem(renderedPath, `objects are in namespaces [${[...namespaces].join(", ")}], expected one`);
}
const namespace = [...namespaces][0];
if (!byKind("Namespace").some((n) => n.metadata?.name === namespace)) {
  problem(renderedPath, `no Namespace object named ${namespace}`);
}

// benchd: one StatefulSet, one replica, its database on the claim.
const benchds = containersRunning("benchd");
if (benchds.length !== 1 || benchds[0].owner.kind !== "StatefulSet") {
  problem(renderedPath, `expected benchd in exactly one StatefulSet, found ${benchds.map((b) => nameOf(b.owner)).join(", ") || "none"}`);
}
let benchdService = null;
let benchdTls = false;
let benchdClientCa = false;
for (const { owner, container } of benchds) {
  const where = `${nameOf(owner)} container ${container.name}`;
  const flags = flagsOf(container);
  checkFlagsExist(where, "benchd", container);
  checkVariablesDefined(where, container);
  if (owner.spec?.replicas !== 1) problem(where, `replicas is ${owner.spec?.replicas}, must be 1 (one SQLite writer)`);

  const db = flags.get("db") ?? "";
  if (!db.startsWith("/")) problem(where, `--db must be an absolute path, got '${db}'`);
  const dbMount = mountHolding(owner, container, db);
  if (!dbMount?.claim) {
    problem(where, `--db=${db} is not on a volumeClaimTemplates volume (the database would die with the pod)`);
  } else {
    const claim = dbMount.claim.spec ?? {};
    if (!(claim.accessModes ?? []).includes("ReadWriteOnce")) problem(where, "the database's claim is not ReadWriteOnce");
    if (!(quantityBytes(claim.resources?.requests?.storage) > 0)) problem(where, "the database's claim requests no storage");
  }

  checkImage(where, container, "benchfleet");
  benchdTls = flags.has("tls-cert");
  benchdClientCa = flags.has("client-ca");
  for (const flag of ["tls-cert", "tls-key", "client-ca", "tokens", "agent-signing-cert", "agent-signing-key"]) {
    if (flags.has(flag)) checkSecretFile(where, owner, container, flag, flags.get(flag));
  }
  if (expect === "gpu") {
    for (const flag of ["agent-signing-cert", "agent-signing-key"]) {
      if (!flags.has(flag)) problem(where, `no --${flag}: benchd signs the agents' certificates (their join-token bootstrap)`);
    }
  }
  if (!benchdTls && !flags.has("insecure")) {
    problem(where, "neither --tls-cert nor --insecure: benchd refuses a non-loopback --listen without one");
  }
  if (benchdTls && !benchdClientCa && !flags.has("tokens")) {
    problem(where, "--tls-cert without --client-ca or --tokens: benchd refuses TLS without authentication");
  }

  const httpPort = portOf(flags.get("http"));
  const grpcPort = portOf(flags.get("listen"));
  if (!(httpPort > 0) || !(grpcPort > 0)) problem(where, "--listen and --http must be HOST:PORT");
  const scheme = benchdTls ? "HTTPS" : "HTTP";
  for (const [probeName, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
    const get = container[probeName]?.httpGet;
    if (!get) {
      problem(where, `no ${probeName} with httpGet`);
      continue;
    }
    if (get.path !== path) problem(where, `${probeName} asks ${get.path}, expected ${path}`);
    if (containerPortNumber(container, get.port) !== httpPort) problem(where, `${probeName}'s port ${get.port} is not --http's port ${httpPort}`);
    if ((get.scheme ?? "HTTP") !== scheme) problem(where, `${probeName} uses ${get.scheme ?? "HTTP"}, benchd's web port speaks ${scheme}`);
  }

  const checkScrape = (whereAnnotations, annotations) => {
    const a = annotations ?? {};
    if (a["prometheus.io/scrape"] !== "true") problem(whereAnnotations, "no prometheus.io/scrape: \"true\"");
    if (a["prometheus.io/port"] !== String(httpPort)) problem(whereAnnotations, `prometheus.io/port is ${a["prometheus.io/port"]}, expected ${httpPort}`);
    if (a["prometheus.io/path"] !== "/metrics") problem(whereAnnotations, "prometheus.io/path is not /metrics");
    if ((a["prometheus.io/scheme"] ?? "http") !== scheme.toLowerCase()) problem(whereAnnotations, `prometheus.io/scheme is not ${scheme.toLowerCase()}`);
  };
  checkScrape(`${nameOf(owner)} pod template`, owner.spec?.template?.metadata?.annotations);

  const podLabels = owner.spec?.template?.metadata?.labels ?? {};
  const selects = (selector) => selector && Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([k, v]) => podLabels[k] === v);
  const services = byKind("Service").filter((s) => selects(s.spec?.selector));
  if (services.length !== 1) {
    problem(where, `expected one Service selecting benchd's pod, found ${services.length}`);
  } else {
    benchdService = services[0];
    const whereService = nameOf(benchdService);
    for (const wanted of [grpcPort, httpPort]) {
      const port = (benchdService.spec.ports ?? []).find((p) => p.port === wanted);
      if (!port) problem(whereService, `does not expose port ${wanted}`);
      else if (containerPortNumber(container, port.targetPort ?? port.port) !== wanted) {
        problem(whereService, `port ${wanted} targets ${port.targetPort}, not benchd's ${wanted}`);
      }
    }
    checkScrape(whereService, benchdService.metadata?.annotations);
    if (owner.spec?.serviceName !== benchdService.metadata?.name) {
      problem(where, `serviceName ${owner.spec?.serviceName} is not the Service ${benchdService.metadata?.name}`);
    }
  }
}

// bench-agent: a DaemonSet.
const agents = containersRunning("bench-agent");
if (agents.length !== 1 || agents[0].owner.kind !== "DaemonSet") {
  problem(renderedPath, `expected bench-agent in exactly one DaemonSet, found ${agents.map((a) => nameOf(a.owner)).join(", ") || "none"}`);
}
for (const { owner, container } of agents) {
  const where = `${nameOf(owner)} container ${container.name}`;
  const pod = podSpecOf(owner);
  const flags = flagsOf(container);
  checkFlagsExist(where, "bench-agent", container);
  checkVariablesDefined(where, container);

  checkImage(where, container, expect === "gpu" ? "benchfleet-gpu" : "benchfleet");

  // /dev/shm: memory-backed and larger than Kubernetes' (and Docker's) 64 MiB.
  const shm = mountHolding(owner, container, "/dev/shm");
  if (!shm || shm.mount.mountPath !== "/dev/shm") {
    problem(where, "nothing is mounted at /dev/shm (Kubernetes' 64 MiB default breaks NCCL)");
  } else if (shm.volume?.emptyDir?.medium !== "Memory") {
    problem(where, "/dev/shm is not an emptyDir with medium: Memory");
  } else if (!(quantityBytes(shm.volume.emptyDir.sizeLimit) >= 2 ** 30)) {
    problem(where, `/dev/shm's sizeLimit ${shm.volume.emptyDir.sizeLimit} is under 1Gi`);
  }

  // The node's name, from the downward API.
  const nameVariable = /^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(flags.get("name") ?? "")?.[1];
  if (!nameVariable || fieldRefOf(container, nameVariable) !== "spec.nodeName") {
    problem(where, `--name must be $(VAR) with VAR from the downward API's spec.nodeName, got '${flags.get("name") ?? ""}'`);
  }

  // benchd through its Service's DNS name and gRPC port.
  const controller = flags.get("controller") ?? "";
  const controllerMatch = /^([^:]+):(\d+)$/.exec(controller);
  if (!controllerMatch) {
    problem(where, `--controller must be HOST:PORT, got '${controller}'`);
  } else if (benchdService) {
    const [service, serviceNamespace, svc] = controllerMatch[1].split(".");
    const namespaceVariable = /^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(serviceNamespace ?? "")?.[1];
    const namespaceOk = serviceNamespace === namespace ||
      (namespaceVariable && fieldRefOf(container, namespaceVariable) === "metadata.namespace");
    if (service !== benchdService.metadata.name || !namespaceOk || svc !== "svc") {
      problem(where, `--controller host '${controllerMatch[1]}' is not ${benchdService.metadata.name}.<namespace>.svc`);
    }
    const listenPort = portOf(flagsOf(benchds[0]?.container ?? {}).get("listen"));
    if (Number(controllerMatch[2]) !== listenPort) problem(where, `--controller port ${controllerMatch[2]} is not benchd's --listen port ${listenPort}`);
  }

  // The address other nodes' ranks dial: the node's IP with host networking, else the pod's.
  const addressVariable = /^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(flags.get("address") ?? "")?.[1];
  const addressField = addressVariable ? fieldRefOf(container, addressVariable) : "";
  if (pod.hostNetwork === true) {
    if (addressField !== "status.hostIP") problem(where, "with hostNetwork, --address must be $(VAR) from status.hostIP");
    if (pod.dnsPolicy !== "ClusterFirstWithHostNet") problem(where, "with hostNetwork, dnsPolicy must be ClusterFirstWithHostNet (else the Service's name does not resolve)");
  } else if (addressField !== "status.podIP") {
    problem(where, "on the pod network, --address must be $(VAR) from status.podIP");
  }

  // The spool outlives the container: not an emptyDir, not the image's file system.
  const stateDir = flags.get("state-dir") ?? flags.get("state_dir") ?? "";
  const spool = stateDir ? mountHolding(owner, container, stateDir) : null;
  if (!spool) problem(where, `--state-dir '${stateDir}' is on no volume mount`);
  else if (!spool.volume?.hostPath && !spool.claim && !spool.volume?.persistentVolumeClaim) {
    problem(where, `--state-dir ${stateDir} is on volume ${spool.mount.name}, which dies with the pod (use a hostPath or a claim)`);
  }

  const gpuLimit = Number(container.resources?.limits?.["nvidia.com/gpu"] ?? 0);
  const tolerates = (pod.tolerations ?? []).some((t) => t.key === "nvidia.com/gpu" &&
    (t.operator === "Exists" || t.operator === undefined) && (t.effect ?? "NoSchedule") === "NoSchedule");
  if (expect === "gpu") {
    if (!(gpuLimit >= 1)) problem(where, "no nvidia.com/gpu resource limit");
    if (!tolerates) problem(where, "no toleration of the nvidia.com/gpu:NoSchedule taint");
    if (Object.keys(pod.nodeSelector ?? {}).length === 0) problem(where, "no nodeSelector for GPU nodes");
    if (flags.has("cpu-slots") || flags.has("cpu_slots")) problem(where, "--cpu-slots on GPU nodes hides the GPUs");
    for (const flag of ["tls-ca", "join-token-file"]) {
      if (!flags.has(flag)) problem(where, `no --${flag}: a GPU fleet's agents bootstrap their own certificate with a join token`);
      else checkSecretFile(where, owner, container, flag, flags.get(flag));
    }
    if (!benchdClientCa) problem(where, "benchd has no --client-ca: the agents' certificates would not be checked");
  } else {
    if (gpuLimit !== 0) problem(where, "the CPU profile asks for nvidia.com/gpu");
    if (!(Number(flags.get("cpu-slots") ?? flags.get("cpu_slots") ?? 0) >= 1)) problem(where, "the CPU profile offers no --cpu-slots");
  }
  // No key reaches an agent: it makes its own in its state directory.
  for (const flag of ["tls-cert", "tls-key"]) {
    if (flags.has(flag)) problem(where, `--${flag}: an agent is given no certificate or key (it bootstraps its own with --join-token-file)`);
  }
  const benchdSecrets = new Set();
  for (const { owner: benchdOwner } of benchds) {
    for (const v of podSpecOf(benchdOwner).volumes ?? []) if (v.secret) benchdSecrets.add(v.secret.secretName);
  }
  const agentMounts = new Set((container.volumeMounts ?? []).map((m) => m.name));
  for (const volume of pod.volumes ?? []) {
    if (!volume.secret || !agentMounts.has(volume.name)) continue;
    const secretName = volume.secret.secretName;
    if (benchdSecrets.has(secretName)) problem(where, `mounts Secret ${secretName}, which benchd mounts (its keys)`);
    if (!Array.isArray(volume.secret.items) || volume.secret.items.length === 0) {
      problem(where, `mounts the whole Secret ${secretName}: list its items, so that no key in it reaches the agent`);
      continue;
    }
    for (const item of volume.secret.items) {
      if (/key/i.test(item.key ?? "") || /key/i.test(item.path ?? "")) {
        problem(where, `mounts ${item.key} of Secret ${secretName}: no key reaches an agent (it makes its own)`);
      }
    }
  }
  const agentTls = flags.has("tls-ca");
  if (agentTls !== benchdTls) problem(where, `the agent ${agentTls ? "uses" : "does not use"} TLS but benchd ${benchdTls ? "does" : "does not"}`);
}

if (problems.length) {
  for (const p of problems) console.error(`check_manifests: ${renderedPath}: ${p}`);
  process.exit(1);
}
console.log(`check_manifests: ${renderedPath}: ${objects.length} objects valid (${expect})`);
