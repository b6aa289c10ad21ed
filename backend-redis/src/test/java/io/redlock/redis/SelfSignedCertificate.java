package io.redlock.redis;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * A self-signed certificate for 127.0.0.1 made with the JDK's keytool (always there, unlike the
 * openssl command), written as the PEM files redis-server reads, plus a socket factory that trusts
 * it.
 */
record SelfSignedCertificate(Path certificate, Path key, SSLSocketFactory trustingFactory) {

  static SelfSignedCertificate create(Path dir) throws Exception {
    Files.createDirectories(dir);
    Path store = dir.resolve("server.p12");
    Files.deleteIfExists(store);
    char[] password = "changeit".toCharArray();
    Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
    Process p =
        new ProcessBuilder(
                List.of(
                    keytool.toString(),
                    "-genkeypair",
                    "-alias",
                    "redis",
                    "-keyalg",
                    "RSA",
                    "-keysize",
                    "2048",
                    "-dname",
                    "CN=127.0.0.1",
                    "-ext",
                    "san=ip:127.0.0.1",
                    "-validity",
                    "2",
                    "-storetype",
                    "PKCS12",
                    "-keystore",
                    store.toString(),
                    "-storepass",
                    "changeit",
                    "-keypass",
                    "changeit"))
            .redirectErrorStream(true)
            .start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException("keytool failed: " + output);
    }
    KeyStore keyStore = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(store)) {
      keyStore.load(in, password);
    }
    Key key = keyStore.getKey("redis", password);
    Certificate cert = keyStore.getCertificate("redis");
    Path certFile = dir.resolve("server.crt");
    Path keyFile = dir.resolve("server.key");
    Files.writeString(certFile, pem("CERTIFICATE", cert.getEncoded()));
    Files.writeString(keyFile, pem("PRIVATE KEY", key.getEncoded())); // PKCS#8

    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("redis", cert);
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, tmf.getTrustManagers(), null);
    return new SelfSignedCertificate(certFile, keyFile, context.getSocketFactory());
  }

  private static String pem(String type, byte[] der) {
    String body =
        Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
    return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
  }
}
