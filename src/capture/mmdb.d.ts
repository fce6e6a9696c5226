/** A MaxMind DB file imported `with { type: "file" }`: its path, inside the executable once compiled. */
declare module "*.mmdb" {
  const path: string;
  export default path;
}
