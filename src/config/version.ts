// biome-ignore lint/style/noRestrictedImports: package.json is no folder of src/; its version is the service's
import pkg from "../../package.json" with { type: "json" };

/** The service's version, as `ingest --version` prints it and a backup's manifest records it. */
export const SERVICE_VERSION: string = pkg.version;
