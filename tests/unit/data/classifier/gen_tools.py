#!/usr/bin/env python3
"""Generates the case tables of issue 12's tools (netraw.tsv, interp.tsv, fixes.tsv, tools.tsv,
cloud.tsv) and prints the case count per tool.  Run from anywhere:
    python3 tests/unit/data/classifier/gen_tools.py
Format: LINE<TAB>EXPECTED<TAB>TOOL: NOTE (U+2424 a newline, U+2409 a tab in LINE)."""
import collections
import os

NL = "\u2424"
TABLES = collections.OrderedDict()
COUNTS = collections.Counter()


# Groups whose cases are counted per program (the line's first word after assignments and
# sudo; `python -m build` counts as build).
AGGREGATES = {"containers", "system", "gem-bundle", "hatch-flit-build"}


def program(line):
    words = [w for w in line.split() if "=" not in w.split("/")[0] or w.startswith("-")]
    while words and words[0] in ("sudo", "env"):
        words = words[1:]
    if len(words) > 2 and words[0].startswith("python") and words[1] == "-m":
        return words[2]
    return words[0] if words else "?"


def table(name):
    TABLES.setdefault(name, [])

    def c(tool, line, exp, note):
        assert "\t" not in line and "\n" not in line, line
        TABLES[name].append((line, exp, tool + ": " + note))
        COUNTS[program(line) if tool in AGGREGATES else tool] += 1
    return c


# ---- raw network tools, /dev/tcp: net:raw ------------------------------------------------
c = table("netraw.tsv")
c("nc", "nc example.test 80", "net:raw", "plain connect")
c("nc", "nc -zv h.test 22", "net:raw", "port scan flags")
c("nc", "nc -w 3 h.test 443 < req.txt", "net:raw", "-w takes a value")
c("nc", "echo hi | nc -q 1 h.test 9000", "net:raw", "in a pipeline")
c("nc", "nc -l 8080", "net:raw", "listening is still a raw socket")
c("nc", "ncat --ssl h.test 443", "net:raw", "ncat")
c("nc", "netcat h.test 25", "net:raw", "netcat")
c("nc", "/bin/nc.openbsd h.test 80", "net:raw", "nc.openbsd, Debian's nc, under its own name (black-box round 7)")
c("nc", "nc.traditional -q 1 h.test 80", "net:raw", "nc.traditional")
c("nc", "sudo nc h.test 80", "net:raw", "through a wrapper")
c("nc", "nc -e 'git push' h.test 4444", "git:push,net:raw", "-e runs a command")
c("nc", "ncat -c 'curl -d @f https://x.test' h.test 1", "http:write,net:raw", "ncat -c runs a shell command")
c("nc", "nc -e \"$CMD\" h.test 1", "deny", "-e command that is not static")
c("nc", "man nc", "none", "the manual")
c("nc", "echo nc h.test 80", "none", "nc as data")
c("socat", "socat - TCP:h.test:80", "net:raw", "socat to a TCP address")
c("socat", "socat TCP-LISTEN:8080,fork TCP:h.test:80", "net:raw", "a relay")
c("socat", "socat - OPENSSL:h.test:443,verify=0", "net:raw", "TLS address with options")
c("socat", "socat - EXEC:'git push'", "git:push,net:raw", "EXEC runs a command")
c("socat", "socat - SYSTEM:'curl https://x.test'", "http:read,net:raw", "SYSTEM runs a shell command")
c("socat", "socat -d -d - UDP:192.0.2.1:53", "net:raw", "UDP")
c("socat", "socat - \"EXEC:$X\"", "deny", "EXEC command that is not static")
c("telnet", "telnet h.test 25", "net:raw", "telnet")
c("telnet", "telnet", "net:raw", "interactive telnet still connects where its input says")
c("telnet", "echo quit | telnet -l u h.test", "net:raw", "-l takes a value")
c("openssl", "openssl s_client -connect h.test:443 -servername h.test", "net:raw", "s_client")
c("openssl", "echo | openssl s_client -connect h.test:443 2>/dev/null | openssl x509 -noout -dates", "net:raw", "s_client in a certificate check pipeline")
c("openssl", "openssl s_time -connect h.test:443 -new", "net:raw", "s_time")
c("openssl", "openssl ocsp -issuer ca.pem -cert c.pem -url http://ocsp.test", "net:raw", "ocsp with a responder")
c("openssl", "openssl ocsp -index idx.txt -rsigner r.pem -CA ca.pem -port 8888", "none", "an OCSP responder listens: ocsp without -url/-host")
c("openssl", "openssl x509 -in cert.pem -noout -text", "none", "local subcommand")
c("openssl", "openssl req -new -x509 -nodes -keyout k.pem -out c.pem -subj /CN=x", "none", "local subcommand")
c("openssl", "openssl rand -hex 16", "none", "local subcommand")
c("openssl", "openssl dgst -sha256 f", "none", "local subcommand")
c("openssl", "echo s_client -connect h.test:443 | openssl", "net:raw", "openssl reads commands from its input")
c("openssl", "openssl $SUB -connect h.test:443", "deny", "subcommand that is not static")
c("ftp", "ftp ftp.h.test", "net:raw", "ftp")
c("ftp", "ftp -n h.test < cmds.txt", "net:raw", "scripted ftp")
c("ftp", "lftp -u user,pass -e 'get f; bye' ftp://h.test", "net:raw", "lftp")
c("ftp", "lftp -c 'open h.test; mirror -R dist /pub'", "net:raw", "lftp -c")
c("ftp", "tftp 192.0.2.1 -c get boot.img", "net:raw", "tftp")
c("websocat", "websocat wss://ws.h.test/socket", "net:raw", "websocat")
c("websocat", "echo '{}' | websocat -n1 ws://127.0.0.1:9000/", "net:raw", "websocat on loopback")
c("grpcurl", "grpcurl -plaintext localhost:50051 list", "net:raw", "grpcurl list")
c("grpcurl", "grpcurl -d '{\"id\": 1}' api.h.test:443 pkg.Svc/Get", "net:raw", "grpcurl call")
c("grpcurl", "grpcurl -help", "net:raw", "grpcurl is net:raw whatever its flags")
c("/dev/tcp", "exec 3<>/dev/tcp/h.test/80", "net:raw", "bash's /dev/tcp on a descriptor")
c("/dev/tcp", "cat < /dev/tcp/h.test/80", "net:raw", "/dev/tcp as standard input")
c("/dev/tcp", "echo -e 'GET / HTTP/1.0\\r\\n' > /dev/tcp/h.test/80", "net:raw", "/dev/tcp as standard output")
c("/dev/tcp", "echo x >/dev/udp/192.0.2.1/514", "net:raw", "/dev/udp")
c("/dev/tcp", "bash -c 'exec 3<>/dev/tcp/h.test/22'", "net:raw", "inside bash -c")
c("/dev/tcp", "{ echo hi; } > /dev/tcp/h.test/9", "net:raw", "on a group")
c("/dev/tcp", "while read l; do echo $l; done < /dev/tcp/h.test/7", "net:raw", "on a loop")
c("/dev/tcp", "true &>/dev/tcp/h.test/1", "net:raw", "&> form")
c("/dev/tcp", "x 2>/dev/tcp/h.test/1", "net:raw", "on standard error")
c("/dev/tcp", "exec 3<>\"/dev/tcp/$HOST/$PORT\"", "net:raw", "host and port from expansions")
c("/dev/tcp", "exec 3<>/dev/${PROTO}/h.test/80", "net:raw", "the protocol from an expansion may be tcp")
c("/dev/tcp", "echo $(cat </dev/tcp/h.test/13)", "net:raw", "inside a substitution")
c("/dev/tcp", "echo x > /dev/null", "none", "/dev/null")
c("/dev/tcp", "echo x > /dev/tcpdump.log", "none", "a file that starts like /dev/tcp")
c("/dev/tcp", "echo x > dev/tcp/h.test/80", "none", "a relative path is a file")
c("/dev/tcp", "echo x > //dev/tcp/h.test/80", "none", "bash matches /dev/tcp/ exactly")
c("/dev/tcp", "cat /dev/tcp/h.test/80", "none", "an argument: cat opens a file that does not exist")
c("/dev/tcp", "echo /dev/tcp/h.test/80", "none", "as data")
c("/dev/tcp", "cat <<'EOF'" + NL + "exec 3<>/dev/tcp/h.test/80" + NL + "EOF", "none", "in a literal here-doc")
c("/dev/tcp", "bash <<'EOF'" + NL + "exec 3<>/dev/tcp/h.test/80" + NL + "EOF", "net:raw", "in a here-doc script")

# ---- attack round 4, finding 15: network programs that had no entry ----------------------
for tool, line, exp, note in [
        ("dns", "delv @127.0.0.1 -p 5353 example.test", "dns", "delv"),
        ("dns", "mdig @127.0.0.1 -p 5353 example.test", "dns", "mdig"),
        ("dns", "kdig example.test", "dns", "kdig"),
        ("dns", "printf 'server 127.0.0.1 5353\\nsend\\n' | nsupdate", "dns", "nsupdate: an update"),
        ("dns", "nsupdate <<< 'server 127.0.0.1 5353'", "dns", "nsupdate from a here-string"),
        ("dns", "dnsperf -s 127.0.0.1 -p 5353 -l 1 <<< 'example.test A'", "dns", "dnsperf"),
        ("ssh-keyscan", "ssh-keyscan -T 1 -p 443 127.0.0.1", "ssh:read", "it opens SSH connections"),
        ("ssh-keyscan", "ssh-keyscan github.com >> ~/.ssh/known_hosts", "ssh:read", "the usual form"),
        ("busybox", "busybox rdate 127.0.0.1", "net:raw", "rdate"),
        ("busybox", "busybox traceroute -n -m 1 -q 1 127.0.0.1", "net:raw", "traceroute"),
        ("busybox", "busybox ping -c1 127.0.0.1", "net:raw", "ping"),
        ("busybox", "busybox ntpd -q -p 127.0.0.1", "net:raw", "ntpd"),
        ("busybox", "busybox ssl_client 3", "net:raw", "ssl_client"),
        ("ping", "ping -c1 h.test", "net:raw", "ICMP"),
        ("ping", "traceroute h.test", "net:raw", "traceroute"),
        ("ping", "arping -c1 10.0.0.1", "net:raw", "arping"),
        ("ping", "whois example.test", "net:raw", "whois"),
        ("ping", "nmap -p 80 h.test", "net:raw", "nmap"),
        ("ping", "ping", "none", "no operand: a usage message"),
        ]:
    c(tool, line, exp, note)

# ---- interpreter one-liners -------------------------------------------------------------
c = table("interp.tsv")
c("python", "python3 -c \"print(1)\"", "none", "no network API")
c("python", "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"name\"])' < package.json", "none", "json from a file")
c("python", "python3 -c \"import urllib.request; print(urllib.request.urlopen('https://x.test').read())\"", "net:raw", "urllib")
c("python", "python -c 'import requests; requests.get(\"https://x.test\")'", "net:raw", "requests")
c("python", "python3 -c 'import socket; s=socket.create_connection((\"h.test\", 80))'", "net:raw", "socket")
c("python", "python3 -c 'import http.client as h; h.HTTPSConnection(\"h.test\").request(\"GET\", \"/\")'", "net:raw", "http.client")
c("python", "python3 -c 'from http import client'", "net:raw", "http client imported by name")
c("python", "python3 -c 'import http.server'", "none", "http.server alone serves, it does not connect")
c("python", "python3 -c 'import httpx; httpx.post(\"https://x.test\")'", "net:raw", "httpx")
c("python", "python3 -c 'import aiohttp'", "net:raw", "aiohttp")
c("python", "python3 -c 'import ftplib'", "net:raw", "ftplib")
c("python", "python3 -c 'import smtplib'", "net:raw", "smtplib")
c("python", "python3 -Ic 'import socket'", "net:raw", "-c bundled after -I")
c("python", "python3.11 -c 'import urllib3'", "net:raw", "a versioned name")
c("python", "/usr/bin/python3 -B -c 'import requests'", "net:raw", "absolute path and a flag")
c("python", "python3 -c 'import platform; print(platform.system())'", "none", "platform.system is not os.system")
c("python", "python3 -c 'import re; print(re.compile(\"a\").match(\"a\"))'", "none", "re.compile is no code execution")
c("python", "python3 -c 'import os; os.system(\"git push\")'", "deny", "os.system runs a command line that is not followed")
c("python", "python3 -c 'import subprocess; subprocess.run([\"git\", \"push\"])'", "deny", "subprocess")
c("python", "python3 -c 'exec(\"import soc\" + \"ket\")'", "deny", "exec of built code")
c("python", "python3 -c '__import__(\"so\"+\"cket\")'", "deny", "__import__ of a built name")
c("python", "python3 -c \"$CODE\"", "deny", "program text that is not static")
c("python", "python3 -c \"print('$HOME')\"", "deny", "an expansion inside the program text")
c("python", "python3 script.py", "none", "a script file is out of reach")
c("python", "python3 -m http.server 8000", "none", "a module that listens")
c("python", "python3 -m json.tool package.json", "none", "a local module")
c("python", "python3 -m venv .venv", "none", "venv")
c("python", "python3 -m pytest -q tests/", "none", "pytest")
c("python", "python3 -W ignore -c 'import socket'", "net:raw", "-W takes a value")
c("python", "echo 'import requests' > x.py", "none", "as data")
c("node", "node -e \"console.log(1)\"", "none", "no network API")
c("node", "node -e \"fetch('https://x.test').then(r => r.text()).then(console.log)\"", "net:raw", "fetch")
c("node", "node -e \"require('https').get('https://x.test')\"", "net:raw", "https")
c("node", "node -e \"require('net').connect(80, 'h.test')\"", "net:raw", "net")
c("node", "node -p \"require('http').STATUS_CODES[404]\"", "net:raw", "-p with http: any mention counts")
c("node", "node -p 'process.version'", "none", "-p without a network API")
c("node", "node --eval \"new WebSocket('wss://x.test')\"", "net:raw", "--eval")
c("node", "nodejs -e \"require('dgram')\"", "net:raw", "dgram")
c("node", "node -e \"require('child_process').execSync('git push')\"", "deny", "child_process")
c("node", "node -e \"eval(atob('Zm9v'))\"", "deny", "eval")
c("node", "node -r ./setup.js -e 'console.log(2)'", "none", "-r takes a module")
c("node", "node -r https -e 'console.log(2)'", "net:raw", "-r preloads a network module")
c("node", "node server.js", "none", "a script file is out of reach")
c("node", "node --version", "none", "version")
c("node", "node -e \"$JS\"", "deny", "program text that is not static")
c("node", "node -e \"JSON.parse(require('fs').readFileSync('package.json')).version\"", "none", "fs only")
c("deno", "deno eval \"console.log(1)\"", "none", "deno eval without a network API")
c("deno", "deno eval \"await fetch('https://x.test')\"", "net:raw", "deno eval with fetch")
c("deno", "deno eval \"Deno.connect({hostname: 'h.test', port: 80})\"", "net:raw", "Deno.connect")
c("deno", "deno eval \"new Deno.Command('git', {args: ['push']}).outputSync()\"", "deny", "Deno.Command runs a program")
c("deno", "deno run https://x.test/mod.ts", "http:read", "a remote module is fetched")
c("deno", "deno run --allow-net server.ts", "net:raw", "a network permission")
c("deno", "deno run -A main.ts", "net:raw", "all permissions")
c("deno", "deno run main.ts", "none", "no permissions: the program cannot connect")
c("deno", "deno fmt", "none", "local")
c("deno", "deno test", "none", "tests without a network permission")
c("deno", "deno add jsr:@std/path", "http:read", "add fetches")
c("deno", "deno install", "http:read", "install fetches")
c("deno", "deno publish", "http:write", "publish")
c("deno", "deno frobnicate", "http:read,http:write", "unknown subcommand")
c("perl", "perl -e 'print 1'", "none", "no network API")
c("perl", "perl -pi -e 's/foo/bar/g' file.txt", "none", "in-place edit")
c("perl", "perl -lane 'print $F[0]' f", "none", "bundled -lane")
c("perl", "perl -MLWP::Simple -e 'getprint \"https://x.test\"'", "net:raw", "LWP::Simple")
c("perl", "perl -MHTTP::Tiny -E 'say HTTP::Tiny->new->get(\"https://x.test\")->{status}'", "net:raw", "HTTP::Tiny with -E")
c("perl", "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(\"h.test:80\")'", "net:raw", "IO::Socket")
c("perl", "perl -e 'use Socket; socket(S, PF_INET, SOCK_STREAM, 6)'", "net:raw", "Socket in the program")
c("perl", "perl -M Net::FTP -e 1", "net:raw", "-M with a separate value")
c("perl", "perl -e 'system(\"git push\")'", "deny", "system")
c("perl", "perl -e 'print `git push`'", "deny", "backticks")
c("perl", "perl -e 'open(F, \"git push |\")'", "deny", "open of a pipe")
c("perl", "perl -e 'open(F, \"<\", \"f\"); print <F>'", "none", "open of a file")
c("perl", "perl -ne 'print if /a|b/' f", "none", "an alternation is no pipe")
c("perl", "perl -i.bak -pe 's/a/b/' f", "none", "-i with an extension")
c("perl", "perl script.pl", "none", "a script file is out of reach")
c("perl", "perl -e \"$P\"", "deny", "program text that is not static")
c("ruby", "ruby -e 'puts 1'", "none", "no network API")
c("ruby", "ruby -rjson -e 'puts JSON.parse(File.read(\"a.json\"))'", "none", "json")
c("ruby", "ruby -rnet/http -e 'puts Net::HTTP.get(URI(\"https://x.test\"))'", "net:raw", "net/http")
c("ruby", "ruby -ropen-uri -e 'URI.open(\"https://x.test\").read'", "net:raw", "open-uri")
c("ruby", "ruby -rsocket -e 'TCPSocket.new(\"h.test\", 80)'", "net:raw", "socket")
c("ruby", "ruby -e 'system(\"git push\")'", "deny", "system")
c("ruby", "ruby -e 'puts `git push`'", "deny", "backticks")
c("ruby", "ruby -e 'puts %x(git push)'", "deny", "%x")
c("ruby", "ruby -ne 'puts $_.upcase' f", "none", "bundled -ne")
c("ruby", "ruby app.rb", "none", "a script file is out of reach")
c("php", "php -r 'echo 1;'", "none", "no network API")
c("php", "php -r 'echo json_encode([1]);'", "none", "json")
c("php", "php -r 'echo file_get_contents(\"https://x.test\");'", "net:raw", "file_get_contents of a URL")
c("php", "php -r 'echo file_get_contents(\"composer.json\");'", "none", "file_get_contents of a file")
c("php", "php -r '$c = curl_init(\"https://x.test\"); curl_exec($c);'", "net:raw", "curl_*")
c("php", "php -r 'fsockopen(\"h.test\", 80);'", "net:raw", "fsockopen")
c("php", "php -r 'echo shell_exec(\"git push\");'", "deny", "shell_exec")
c("php", "php -r 'system(\"git push\");'", "deny", "system")
c("php", "php -r 'echo `git push`;'", "deny", "backticks")
c("php", "php artisan migrate", "none", "a script file is out of reach")
c("php", "php -S localhost:8000", "none", "the built-in server listens")
c("php", "php -v", "none", "version")
c("php", "php8.2 -r 'fsockopen(\"h.test\", 80);'", "net:raw", "a versioned name")

# ---- attack round 4, findings 16 and 18: code the keyword scan cannot see ---------------
B64 = "aW1wb3J0IGNwIGZyb20gImNoaWxkX3Byb2Nlc3MiOyBjcC5leGVjU3luYygiZ2l0IHB1c2giKTs="
for tool, line, exp, note in [
        ("node", "node --import 'data:text/javascript;base64," + B64 + "' -e 1", "deny", "a data: module"),
        ("node", "node -e 'import(\"data:text/javascript;base64," + B64 + "\")'", "deny", "import() of a data: URL"),
        ("node", "node --loader='data:text/javascript;base64," + B64 + "' -e 1", "deny", "--loader"),
        ("node", "node --input-type=module -e 'import \"data:text/javascript,%69mport%20cp%20from%20%22child%5fprocess%22%3bcp.execSync(%22git%20push%22)\"'", "deny", "percent-encoded"),
        ("node", "NODE_OPTIONS='--import data:text/javascript,x' node app.js", "deny", "NODE_OPTIONS"),
        ("node", "node -e 'console.log(process.version)'", "none", "neighbour"),
        ("node", "NODE_OPTIONS=--max-old-space-size=4096 node app.js", "none", "neighbour: NODE_OPTIONS"),
        ("node", "NODE_OPTIONS=\"$NODE_OPTIONS --max-old-space-size=4096\" npm run build", "none", "neighbour: NODE_OPTIONS from the environment"),
        ("python", "python3 -c 'import pickle,base64; pickle.loads(base64.b64decode(\"Y29zCnN5c3RlbQooUydnaXQgcHVzaCcKdFIu\"))'", "deny", "pickle.loads runs what the data names"),
        ("python", "python3 -c 'import pickle; pickle.loads(b\"cos\\nsystem\\n(S\\\"git push\\\"\\ntR.\")'", "deny", "pickle, literal"),
        ("python", "python3 -c 'import yaml; yaml.unsafe_load(open(\"x\"))'", "deny", "yaml.unsafe_load"),
        ("python", "python3 -c 'import pip; pip.main([\"install\",\"x\"])'", "deny", "pip.main installs"),
        ("python", "python3 -c 'import venv; venv.create(\"/tmp/v2\", with_pip=True, upgrade_deps=True)'", "deny", "venv.create upgrade_deps runs pip"),
        ("python", "python3 -c 'import json; print(json.dumps({}))'", "none", "neighbour"),
        ("perl", "HOME=/tmp PERL_MM_USE_DEFAULT=1 perl -MCPAN -e 'install Foo::Bar'", "deny", "CPAN runs wget or curl"),
        ("perl", "perl -MFile::Fetch -e 'File::Fetch->new(uri=>q(http://a.test/x))->fetch'", "deny", "File::Fetch runs wget, curl, lftp"),
        ("perl", "perl -MFile::Find -e 1", "none", "neighbour: another File:: module"),
        ]:
    c(tool, line, exp, note)
for tool, line, exp, note in [
        ("lua", 'lua -e \'os.execute("git push")\'', 'deny', 'os.execute runs a command'),
        ("lua", 'luajit -e \'io.popen("git push")\'', 'deny', 'io.popen runs a command (luajit)'),
        ("lua", 'lua5.4 -e \'os.execute("git push")\'', 'deny', 'a versioned name'),
        ("lua", 'lua -e \'os["exe".."cute"]("git push")\'', 'deny', 'os as a value reaches os.execute by a built name'),
        ("lua", "lua -e 'for k, f in pairs(os) do print(k) end'", 'deny', 'os as a value'),
        ("lua", 'lua -e \'load("os.execute(1)")()\'', 'deny', 'load runs code it builds'),
        ("lua", 'lua -e \'require("so".."cket")\'', 'deny', 'require of a built name'),
        ("lua", 'lua -e \'_G["os"]["execute"]("git push")\'', 'deny', '_G reaches any function'),
        ("lua", 'luajit -e \'require("ffi").C.system("git push")\'', 'deny', "luajit's ffi calls C"),
        ("lua", 'lua -e \'local s = require "socket"; s.connect("h.test", 80)\'', 'net:raw', 'luasocket'),
        ("lua", 'lua -e \'local http = require("socket.http"); http.request("http://h.test/")\'', 'net:raw', 'socket.http'),
        ("lua", 'lua -l socket x.lua', 'net:raw', '-l loads a network library'),
        ("lua", 'lua <<< \'os.execute("git push")\'', 'deny', 'a program from a here-string is scanned'),
        ("lua", "echo 'print(1)' | lua", 'deny', 'a program from a pipe is not static'),
        ("lua", 'cat x.lua | lua -', 'deny', 'standard input from a pipe'),
        ("lua", "lua -e 'print(os.time())'", 'none', 'os.time is a field'),
        ("lua", 'lua5.1 -e \'io.write("hi\\n")\'', 'none', 'io.write'),
        ("lua", "lua <<< 'print(1)'", 'none', 'a static here-string'),
        ("lua", 'lua x.lua', 'none', 'a script file is out of reach'),
        ("lua", 'luajit -v', 'none', 'version'),
        ]:
    c(tool, line, exp, note)

# ---- item 5: gh api expansions, refspecs --------------------------------------------------
c = table("fixes.tsv")
c("gh", "gh api \"$ENDPOINT\"", "http:read,http:write", "an expansion may be -XPOST")
c("gh", "gh api $ENDPOINT --jq .name", "http:read,http:write", "unquoted expansion")
c("gh", "gh api repos/o/r \"$EXTRA\"", "http:read,http:write", "an expansion after the endpoint")
c("gh", "gh api \"repos/$REPO/pulls\"", "http:read", "an expansion inside the endpoint only")
c("gh", "gh api repos/o/r/pulls", "http:read", "plain read")
c("gh", "gh api -X POST repos/o/r/issues -f title=x", "http:write", "plain write")
c("git", "git push origin HEAD:main", "git:push", "HEAD:main is a refspec, not a host")
c("git", "git push origin +HEAD:refs/heads/main", "git:push", "forced refspec")
c("git", "git push origin :old-branch", "git:push", "delete refspec")
c("git", "git fetch origin main:main", "git:fetch", "fetch refspec")
c("git", "git pull origin refs/heads/a:refs/remotes/origin/a", "git:fetch", "pull refspec")
c("git", "git push -u origin feature:feature", "git:push", "-u is a flag for push")
c("git", "git clone -b main git@github.com:o/r.git", "git:fetch", "-b takes a value")
c("git", "git ls-remote origin 'refs/tags/*'", "git:fetch", "a pattern")

# ---- package managers and registries (item 1) ---------------------------------------------
c = table("tools.tsv")
RD, WR, RW = "http:read", "http:write", "http:read,http:write"
for line, exp, note in [
        ("npm install", RD, "install"), ("npm i", RD, "i"), ("npm i -D typescript", RD, "i with a flag"),
        ("npm ci", RD, "ci"), ("npm add lodash", RD, "add"), ("npm update", RD, "update"),
        ("npm view react version", RD, "view"), ("npm outdated", RD, "outdated"),
        ("npm --prefix web install", RD, "--prefix takes a value"),
        ("npm install --registry https://npm.mirror.test/", RD, "--registry names the host"),
        ("npm_config_registry=https://npm.mirror.test npm ci", RD, "registry from the environment"),
        ("npm publish", WR, "publish"), ("npm publish --access public", WR, "publish --access"),
        ("npm unpublish pkg@1.0.0", WR, "unpublish"), ("npm deprecate pkg@1 'use 2'", WR, "deprecate"),
        ("npm dist-tag add pkg@1.2.0 latest", WR, "dist-tag add"), ("npm dist-tag ls pkg", RD, "dist-tag ls reads"),
        ("npm owner add alice pkg", WR, "owner add"), ("npm owner ls pkg", RD, "owner ls reads"),
        ("npm login", WR, "login"), ("npm adduser", WR, "adduser"), ("npm token create", WR, "token create"),
        ("npm audit", RW, "audit posts the tree"), ("npm audit fix", RW, "audit fix"),
        ("npm test", "none", "local: test"), ("npm run build", "none", "local: run"), ("npm start", "none", "local: start"),
        ("npm ls", "none", "local: ls"), ("npm config get registry", "none", "local: config"),
        ("npm uninstall lodash", "none", "local: uninstall"), ("npm version patch", "none", "local: version"),
        ("npm init -y", "none", "init without an initializer"), ("npm init vite@latest", RD, "init NAME fetches create-NAME"),
        ("npm cache clean --force", "none", "cache clean"), ("npm cache add pkg", RD, "cache add fetches"),
        ("npm exec -- eslint .", RD, "exec fetches the package"), ("npm exec -- git push", "git:push,http:read", "exec runs the command"),
        ("npm frobnicate", RW, "unknown verb"), ("npm $VERB", "deny", "verb that is not static"),
        ("cd web && npm ci && npm run build", RD, "in a list"),
        ]:
    c("npm", line, exp, note)
for line, exp, note in [
        ("pnpm install", RD, "install"), ("pnpm i --frozen-lockfile", RD, "i"), ("pnpm add -D vitest", RD, "add"),
        ("pnpm update", RD, "update"), ("pnpm publish", WR, "publish"), ("pnpm publish --no-git-checks", WR, "publish with a flag"),
        ("pnpm test", "none", "local"), ("pnpm run build", "none", "run"), ("pnpm build", "none", "a package.json script"),
        ("pnpm lint", "none", "a package.json script"), ("pnpm -C web install", RD, "-C takes a value"),
        ("pnpm dlx create-vite app", RD, "dlx fetches"), ("pnpm exec tsc", "none", "exec runs a local binary"),
        ("pnpm exec git push", "git:push", "exec runs the command"), ("pnpm audit", RW, "audit"),
        ("pnpm frobnicate-things", RW, "unknown verb"), ("pnpm ci", RD, "ci, as issue 12 lists it"),
        ("pnpm view react", RD, "view"),
        ]:
    c("pnpm", line, exp, note)
for line, exp, note in [
        ("yarn", RD, "yarn alone installs"), ("yarn install --frozen-lockfile", RD, "install"),
        ("yarn add react", RD, "add"), ("yarn upgrade", RD, "upgrade"), ("yarn publish", WR, "yarn 1 publish"),
        ("yarn npm publish", WR, "yarn berry publish"), ("yarn npm login", WR, "yarn npm login"),
        ("yarn npm info react", RD, "yarn npm info"), ("yarn npm tag list react", RD, "tag list"),
        ("yarn build", "none", "a package.json script"), ("yarn test", "none", "test"), ("yarn run dev", "none", "run"),
        ("yarn test:unit", "none", "a script with a colon"), ("yarn dlx create-react-app x", RD, "dlx fetches"),
        ("yarn exec git push", "git:push", "exec runs the command"), ("yarn workspace web add zod", RD, "workspace NAME add"),
        ("yarn workspace web build", "none", "workspace NAME script"), ("yarn global add serve", RD, "global add"),
        ("YARN_NPM_REGISTRY_SERVER=https://y.test yarn install", RD, "registry from the environment"),
        ("yarn frobnicate", RW, "unknown verb"), ("yarn update", RD, "update"), ("yarn ci", RD, "ci"),
        ]:
    c("yarn", line, exp, note)
for line, exp, note in [
        ("bun install", RD, "install"), ("bun i", RD, "i"), ("bun add hono", RD, "add"), ("bun update", RD, "update"),
        ("bun publish", WR, "publish"), ("bun run dev", "none", "run"), ("bun test", "none", "test"),
        ("bun index.ts", "none", "a file"), ("bun dev", "none", "a package.json script"),
        ("bun x cowsay hi", RD, "bun x fetches"), ("bunx prisma generate", RD, "bunx fetches"),
        ("bun exec 'git push'", "git:push", "bun exec runs a shell string"), ("bun frobnicate", RW, "unknown verb"),
        ("bun ci", RD, "ci"), ("bun view hono", RD, "view"),
        ]:
    c("bun", line, exp, note)
for line, exp, note in [
        ("npx -y cowsay hi", RD, "npx fetches"), ("npx --registry https://n.test/ cowsay", RD, "npx with a registry"),
        ]:
    c("npx", line, exp, note)
for line, exp, note in [
        ("pip install requests", RD, "install"), ("pip3 install -r requirements.txt", RD, "-r FILE"),
        ("pip install -e .", RD, "editable local project still fetches dependencies"),
        ("pip install --upgrade pip", RD, "upgrade"), ("pip download -d wheels x", RD, "download"),
        ("pip wheel -w dist .", RD, "wheel"), ("pip index versions requests", RD, "index"),
        ("pip install -i https://pypi.mirror.test/simple x", RD, "-i names the host"),
        ("pip install --index-url=https://pypi.mirror.test/simple x", RD, "--index-url="),
        ("pip install --extra-index-url https://extra.test/simple x", RD, "an extra index beside the default"),
        ("pip install --no-index --find-links ./wheels x", RD, "no index, local wheels"),
        ("PIP_INDEX_URL=https://pypi.mirror.test/simple pip install x", RD, "index from the environment"),
        ("pip install git+https://git.test/o/r.git", RD, "a VCS URL"),
        ("pip list", "none", "local: list"), ("pip freeze > requirements.txt", "none", "local: freeze"),
        ("pip show requests", "none", "local: show"), ("pip uninstall -y x", "none", "local: uninstall"),
        ("pip check", "none", "local: check"), ("pip config list", "none", "local: config"),
        ("pip --version", "none", "version"), ("pip frobnicate", RW, "unknown verb"),
        ("python -m pip install requests", RD, "python -m pip"), ("python3 -m pip install -U pip", RD, "python3 -m pip"),
        ("python3.12 -m pip list", "none", "python -m pip list"), ("sudo pip3.11 install x", RD, "versioned pip"),
        ("pip3 install $PKG", RD, "a package from an expansion still installs"),
        ]:
    c("pip", line, exp, note)
for line, exp, note in [
        ("pipx install black", RD, "install"), ("pipx upgrade-all", RD, "upgrade-all"), ("pipx inject x y", RD, "inject"),
        ("pipx run cowsay hi", RD, "run fetches"), ("pipx run --spec httpie http https://x.test", RD, "run with --spec"),
        ("pipx list", "none", "local"), ("pipx uninstall black", "none", "local"), ("pipx ensurepath", "none", "local"),
        ("pipx frobnicate", RW, "unknown verb"),
        ]:
    c("pipx", line, exp, note)
for line, exp, note in [
        ("uv add httpx", RD, "add"), ("uv sync", RD, "sync"), ("uv sync --frozen", RD, "sync --frozen"),
        ("uv lock", RD, "lock"), ("uv pip install requests", RD, "pip install"), ("uv pip sync requirements.txt", RD, "pip sync"),
        ("uv pip compile requirements.in", RD, "pip compile"), ("uv pip list", "none", "pip list"),
        ("uv pip freeze", "none", "pip freeze"), ("uv tool install ruff", RD, "tool install"),
        ("uv tool list", "none", "tool list"), ("uv python install 3.12", RD, "python install"),
        ("uv python pin 3.12", "none", "python pin"), ("uv publish", WR, "publish"),
        ("uv publish --publish-url https://upload.test/legacy/", WR, "publish URL"),
        ("uv sync --offline", "none", "offline"), ("UV_OFFLINE=1 uv sync", "none", "offline from the environment"),
        ("uv add --index-url https://pypi.mirror.test/simple x", RD, "an index"),
        ("uv init", "none", "init"), ("uv cache clean", "none", "cache"), ("uv run pytest", "none", "run"),
        ("uvx ruff check .", RD, "uvx fetches the tool"), ("uv frobnicate", RW, "unknown verb"),
        ("python3 -m uv pip install x", RD, "python -m uv"),
        ]:
    c("uv", line, exp, note)
for line, exp, note in [
        ("poetry install", RD, "install"), ("poetry add requests", RD, "add"), ("poetry update", RD, "update"),
        ("poetry lock", RD, "lock"), ("poetry publish", WR, "publish"), ("poetry publish --build -r private", WR, "publish to a named repository"),
        ("poetry build", "none", "build"), ("poetry show", "none", "show"), ("poetry show --outdated", RD, "show --outdated asks the index"),
        ("poetry run pytest", "none", "run"), ("poetry run git push", "git:push", "run runs the command"),
        ("poetry self update", RD, "self update"), ("poetry check", "none", "check"), ("poetry frobnicate", RW, "unknown verb"),
        ]:
    c("poetry", line, exp, note)
for line, exp, note in [
        ("twine upload dist/*", WR, "upload"), ("twine upload -r testpypi dist/*", WR, "upload to a named repository"),
        ("twine upload --repository-url https://up.test/legacy/ dist/*", WR, "upload URL"),
        ("python -m twine upload dist/*", WR, "python -m twine"), ("python3 -m twine check dist/*", "none", "check"),
        ("twine check dist/*", "none", "check"), ("twine frobnicate", RW, "unknown verb"),
        ]:
    c("twine", line, exp, note)
for line, exp, note in [
        ("hatch publish", WR, "publish"), ("hatch build", RD, "build installs build dependencies"),
        ("hatch run test", RD, "run installs the environment"), ("hatch version", "none", "version"),
        ("flit publish", WR, "publish"), ("flit build", "none", "build"), ("flit install", RD, "install"),
        ("python -m build", RD, "python -m build installs build dependencies"),
        ("python -m build --no-isolation", "none", "no isolation: nothing fetched"),
        ]:
    c("hatch-flit-build", line, exp, note)
for line, exp, note in [
        ("cargo install ripgrep", RD, "install"), ("cargo fetch", RD, "fetch"), ("cargo add serde", RD, "add"),
        ("cargo update", RD, "update"), ("cargo search tokio", RD, "search"), ("cargo +nightly install x", RD, "toolchain"),
        ("cargo publish", WR, "publish"), ("cargo publish --dry-run", WR, "publish --dry-run still talks to the registry"),
        ("cargo yank --version 1.0.1", WR, "yank"), ("cargo owner --add alice", WR, "owner"),
        ("cargo build --release", "none", "build"), ("cargo test", "none", "test"), ("cargo run", "none", "run"),
        ("cargo clippy -- -D warnings", "none", "clippy"), ("cargo fmt --check", "none", "fmt"),
        ("cargo install --offline x", "none", "offline"), ("cargo frobnicate", RW, "unknown subcommand (a cargo-X plugin)"),
        ]:
    c("cargo", line, exp, note)
for line, exp, note in [
        ("go get github.com/o/r@v1.2.3", RD, "get"), ("go install golang.org/x/tools/gopls@latest", RD, "install"),
        ("go mod download", RD, "mod download"), ("go mod tidy", RD, "mod tidy fetches what is missing"),
        ("go mod init example.test/m", "none", "mod init"), ("go build ./...", "none", "build"),
        ("go test ./...", "none", "test"), ("go vet ./...", "none", "vet"), ("go run .", "none", "run a local package"),
        ("go run example.test/cmd/x@latest", RD, "run MODULE@VERSION fetches"),
        ("GOPROXY=https://goproxy.test go mod download", RD, "proxy from the environment"),
        ("GOPROXY=off go get x.test/m", "none", "no proxy: nothing fetched"), ("go frobnicate", RW, "unknown verb"),
        ("curl -s https://x.test; GOPROXY=off go get x.test/m", RD, "GOPROXY=off takes nothing from the other commands"),
        ]:
    c("go", line, exp, note)
for line, exp, note in [
        ("gem install rails", RD, "install"), ("gem update --system", RD, "update"), ("gem fetch x", RD, "fetch"),
        ("gem push pkg-1.0.gem", WR, "push"), ("gem yank pkg -v 1.0", WR, "yank"), ("gem owner pkg -a a@b.test", WR, "owner"),
        ("gem signin", WR, "signin"), ("gem list", "none", "list"), ("gem list --remote rails", RD, "list --remote"),
        ("gem build x.gemspec", "none", "build"), ("gem env", "none", "env"),
        ("gem install x --source https://gems.mirror.test", RD, "--source"), ("gem frobnicate", RW, "unknown verb"),
        ("bundle", RD, "bundle alone installs"), ("bundle install", RD, "install"), ("bundle update rails", RD, "update"),
        ("bundle add x", RD, "add"), ("bundle exec rspec", "none", "exec runs a local program"),
        ("bundle exec git push", "git:push", "exec runs the command"), ("bundle check", "none", "check"),
        ("bundle config set path vendor", "none", "config"), ("bundle frobnicate", RW, "unknown verb"),
        ]:
    c("gem-bundle", line, exp, note)
for line, exp, note in [
        ("composer install", RD, "install"), ("composer require monolog/monolog", RD, "require"),
        ("composer update", RD, "update"), ("composer create-project laravel/laravel app", RD, "create-project"),
        ("composer dump-autoload", "none", "dump-autoload"), ("composer validate", "none", "validate"),
        ("composer run-script test", "none", "scripts"), ("composer global require x", RD, "global require"),
        ("composer show", "none", "show installed"), ("composer show --all x", RD, "show --all asks the repository"),
        ("composer exec phpunit", "none", "exec runs a vendor binary"), ("composer frobnicate", RW, "unknown verb"),
        ]:
    c("composer", line, exp, note)
for line, exp, note in [
        ("apt-get install -y curl", RD, "install"), ("sudo apt-get update", RD, "update"),
        ("apt update && apt upgrade -y", RD, "update and upgrade"), ("apt-get -y install --no-install-recommends x", RD, "flags"),
        ("apt-get -s install x", "none", "simulate"), ("apt-get remove x", "none", "remove"), ("apt list --installed", "none", "list"),
        ("apt-cache policy x", "none", "apt-cache is local"), ("aptitude install x", RD, "aptitude"),
        ("apt-get frobnicate", RW, "unknown verb"),
        ("dnf install -y git", RD, "dnf install"), ("yum update", RD, "yum update"), ("dnf remove x", "none", "dnf remove"),
        ("microdnf install x", RD, "microdnf"), ("dnf -C list installed", "none", "cache only"),
        ("apk add --no-cache curl", RD, "apk add"), ("apk update", RD, "apk update"), ("apk del x", "none", "apk del"),
        ("apk info", "none", "apk info"),
        ("brew install jq", RD, "brew install"), ("brew upgrade", RD, "brew upgrade"), ("brew update", RD, "brew update"),
        ("brew list", "none", "brew list"), ("brew uninstall jq", "none", "brew uninstall"),
        ("brew bundle", RD, "brew bundle installs"), ("brew bundle check", "none", "brew bundle check"),
        ("brew bump-formula-pr x", WR, "opens a pull request"), ("brew frobnicate", RW, "unknown verb"),
        ]:
    c("system", line, exp, note)
for line, exp, note in [
        ("docker pull ubuntu:24.04", RD, "pull"), ("docker pull ghcr.test/o/app:1", RD, "pull from a named registry"),
        ("docker image pull alpine", RD, "image pull"), ("docker push registry.test/app:latest", WR, "push"),
        ("docker image push registry.test/app", WR, "image push"), ("docker login", WR, "login"),
        ("docker login registry.test -u me --password-stdin", WR, "login to a registry"),
        ("docker logout", "none", "logout"), ("docker ps", "none", "ps"), ("docker ps -a", "none", "ps -a"),
        ("docker images", "none", "images"), ("docker logs -f web", "none", "logs"), ("docker exec -it web sh", "none", "exec"),
        ("docker stop web", "none", "stop"), ("docker rm -f web", "none", "rm"), ("docker inspect web", "none", "inspect"),
        ("docker tag app registry.test/app", "none", "tag"),
        ("docker run --rm -it -v $PWD:/w -w /w node:20 npm test", RD, "run pulls a missing image"),
        ("docker container run alpine true", RD, "container run"), ("docker build -t app .", RD, "build pulls base images"),
        ("docker buildx build --push -t registry.test/app .", RW, "buildx build --push"),
        ("docker compose up -d", RD, "compose up pulls"), ("docker compose pull", RD, "compose pull"),
        ("docker compose push", WR, "compose push"), ("docker compose logs -f", "none", "compose logs"),
        ("docker compose down", "none", "compose down"), ("docker -H tcp://d.test:2376 ps", RW, "a remote daemon"),
        ("docker search nginx", RD, "search"), ("docker frobnicate", RW, "unknown verb"),
        ("podman pull quay.test/o/x", RD, "podman pull"), ("podman push x", WR, "podman push"),
        ("podman login quay.test", WR, "podman login"), ("podman ps", "none", "podman ps"),
        ("nerdctl pull alpine", RD, "nerdctl pull"),
        ("buildah pull alpine", RD, "buildah pull"), ("buildah bud -t x .", RD, "buildah bud"),
        ("buildah push x docker://registry.test/x", WR, "buildah push"), ("buildah images", "none", "buildah images"),
        ("skopeo inspect docker://quay.test/o/x", RD, "skopeo inspect"),
        ("skopeo copy docker://a.test/x:1 docker://b.test/x:1", RW, "skopeo copy between registries"),
        ("skopeo copy docker://a.test/x:1 oci:/tmp/x", RD, "skopeo copy to a local layout"),
        ("skopeo delete docker://a.test/x:1", WR, "skopeo delete"), ("skopeo login a.test", WR, "skopeo login"),
        ("helm install web ./chart", RW, "helm install writes to the cluster"), ("helm upgrade --install web repo/web", RW, "helm upgrade"),
        ("helm pull repo/web", RD, "helm pull"), ("helm push web-1.0.tgz oci://registry.test/charts", WR, "helm push"),
        ("helm repo add bitnami https://charts.test/bitnami", RD, "helm repo add"), ("helm repo update", RD, "helm repo update"),
        ("helm repo list", "none", "helm repo list"), ("helm list -A", RD, "helm list reads the cluster"),
        ("helm template web ./chart", "none", "helm template"), ("helm lint ./chart", "none", "helm lint"),
        ("helm uninstall web", WR, "helm uninstall"), ("helm registry login registry.test", WR, "helm registry login"),
        ("helm frobnicate", RW, "unknown verb"),
        ]:
    c("containers", line, exp, note)
for line, exp, note in [
        ("gh release create v1.0 dist/*.tar.gz", WR, "release create publishes"),
        ("gh release upload v1.0 x.zip", WR, "release upload"), ("gh release download v1.0", RD, "release download"),
        ("gh release list", RD, "release list"),
        ]:
    c("gh", line, exp, note)

# ---- cloud and cluster clients (item 4) ----------------------------------------------------
c = table("cloud.tsv")
for line, exp, note in [
        ("aws s3 ls", RD, "ls"), ("aws s3 ls s3://bucket/prefix/", RD, "ls a prefix"),
        ("aws s3 cp report.csv s3://bucket/reports/", WR, "cp upload"), ("aws s3 cp s3://bucket/a.txt .", RD, "cp download"),
        ("aws s3 cp s3://a/x s3://b/x", RW, "cp between buckets"), ("aws s3 cp - s3://b/x", WR, "cp from standard input"),
        ("aws s3 mv s3://b/x ./x", RW, "mv download deletes the source"), ("aws s3 mv ./x s3://b/x", WR, "mv upload"),
        ("aws s3 sync ./dist s3://site/", WR, "sync upload"), ("aws s3 sync s3://site/ ./backup", RD, "sync download"),
        ("aws s3 sync s3://a/ s3://b/ --delete", RW, "sync between buckets"),
        ("aws s3 cp --recursive --exclude '*.tmp' ./d s3://b/d", WR, "options before the operands"),
        ("aws s3 rm s3://b/x", WR, "rm"), ("aws s3 mb s3://new", WR, "mb"), ("aws s3 rb s3://old --force", WR, "rb"),
        ("aws s3 presign s3://b/x", "none", "presign signs locally"),
        ("aws --profile prod s3 cp s3://b/x .", RD, "a global option first"),
        ("aws s3 cp \"$SRC\" \"$DST\"", RW, "operands from expansions"),
        ("aws s3 cp x s3://b/ --endpoint-url https://s3.minio.test", WR, "an endpoint URL"),
        ("aws ec2 describe-instances", RW, "another service: both"), ("aws sts get-caller-identity", RW, "sts: both"),
        ("aws s3api put-object --bucket b --key k --body f", RW, "s3api: both"),
        ("aws configure list", "none", "configure is local"), ("aws --version", "none", "version"), ("aws help", "none", "help"),
        ("aws $SVC ls", "deny", "service that is not static"),
        ]:
    c("aws", line, exp, note)
for line, exp, note in [
        ("gsutil ls gs://bucket", RD, "ls"), ("gsutil cp gs://b/x .", RD, "cp download"), ("gsutil cp x gs://b/", WR, "cp upload"),
        ("gsutil -m cp -r ./d gs://b/d", WR, "-m cp"), ("gsutil -m rsync -r ./d gs://b/d", WR, "rsync upload"),
        ("gsutil rsync -r gs://b/d ./d", RD, "rsync download"), ("gsutil mv gs://a/x gs://b/x", RW, "mv between buckets"),
        ("gsutil rm gs://b/x", WR, "rm"), ("gsutil mb gs://new", WR, "mb"), ("gsutil cat gs://b/x", RD, "cat"),
        ("gsutil acl get gs://b", RD, "acl get"), ("gsutil acl ch -u a@b.test:R gs://b/x", RW, "acl ch"),
        ("gsutil version", "none", "version"), ("gsutil frobnicate", RW, "unknown verb"),
        ("gcloud storage cp x gs://b/", WR, "gcloud storage cp upload"), ("gcloud storage cp gs://b/x .", RD, "gcloud storage cp download"),
        ("gcloud storage ls gs://b", RD, "gcloud storage ls"), ("gcloud storage rm gs://b/x", WR, "gcloud storage rm"),
        ("gcloud storage buckets create gs://new", WR, "buckets create"), ("gcloud storage buckets list", RD, "buckets list"),
        ("gcloud compute instances list", RW, "other gcloud groups: both"), ("gcloud config set project p", "none", "config is local"),
        ("gcloud version", "none", "version"),
        ]:
    c("gcloud", line, exp, note)
for line, exp, note in [
        ("az storage blob upload -f x -c c -n n", WR, "upload"), ("az storage blob upload-batch -d c -s ./d", WR, "upload-batch"),
        ("az storage blob download -c c -n n -f x", RD, "download"), ("az storage blob list -c c", RD, "list"),
        ("az storage blob show -c c -n n", RD, "show"), ("az storage blob delete -c c -n n", WR, "delete"),
        ("az storage blob copy start --destination-blob x", WR, "copy start"), ("az storage blob url -c c -n n", "none", "url is local"),
        ("az storage blob frobnicate", RW, "unknown blob verb"), ("az vm list", RW, "other az groups: both"),
        ("az version", "none", "version"), ("az config set x=y", "none", "config"),
        ]:
    c("az", line, exp, note)
for line, exp, note in [
        ("kubectl get pods", RD, "get"), ("kubectl get pods -n kube-system -o wide", RD, "get with options"),
        ("kubectl -n prod get deploy", RD, "a global option first"), ("kubectl describe pod web-0", RD, "describe"),
        ("kubectl logs -f deploy/web", RD, "logs"), ("kubectl top nodes", RD, "top"), ("kubectl explain pods.spec", RD, "explain"),
        ("kubectl apply -f k8s/", WR, "apply"), ("kubectl create namespace x", WR, "create"), ("kubectl delete pod web-0", WR, "delete"),
        ("kubectl patch deploy web -p '{}'", WR, "patch"), ("kubectl edit cm x", WR, "edit"),
        ("kubectl exec -it web-0 -- sh", WR, "exec"), ("kubectl cp web-0:/tmp/x ./x", WR, "cp"),
        ("kubectl scale deploy web --replicas=3", WR, "scale"), ("kubectl rollout restart deploy/web", WR, "rollout restart"),
        ("kubectl rollout status deploy/web", RD, "rollout status only watches"),
        ("kubectl port-forward svc/web 8080:80", WR, "port-forward"), ("kubectl label pod x a=b", WR, "label"),
        ("kubectl config use-context prod", "none", "config is local"), ("kubectl config view", "none", "config view"),
        ("kubectl version --client", "none", "client version"), ("kubectl completion bash", "none", "completion"),
        ("kubectl --server https://k8s.test:6443 get ns", RD, "a server URL"), ("kubectl diff -f x.yaml", RW, "diff: both"),
        ("kubectl frobnicate", RW, "unknown verb"), ("kubectl $VERB pods", "deny", "verb that is not static"),
        ("echo kubectl delete ns prod", "none", "as data"),
        ]:
    c("kubectl", line, exp, note)


# ---- attack round 4, findings 15 and 16: package installs and fetchers -------------------
c = table("tools.tsv")
for tool, line, exp, note in [
        ("pip", "python3 -m venv --upgrade-deps /tmp/vv", RD, "--upgrade-deps runs pip install --upgrade"),
        ("pip", "python3 -m venv --upgrade-d .venv", RD, "an argparse prefix"),
        ("pip", "python3 -m venv .venv", "none", "neighbour: a plain venv"),
        ("pip", "python3 -m venv --upgrade .venv", "none", "neighbour: --upgrade upgrades the venv in place"),
        ("pip", "pip list --outdated", RD, "asks the index for each package"),
        ("pip", "pip list -o", RD, "short form"),
        ("pip", "pip3 list --uptodate", RD, "--uptodate too"),
        ("pip", "pip list", "none", "neighbour"),
        ("cpan", "HOME=/tmp PERL_MM_USE_DEFAULT=1 cpan Foo::Bar", RD, "cpan installs from CPAN"),
        ("cpan", "cpan -i Foo::Bar", RD, "-i"),
        ("cpan", "cpanm Foo::Bar", RD, "cpanm"),
        ("terraform", "terraform init", "git:fetch,http:read", "providers, and modules (git:: sources run git)"),
        ("terraform", "cd /tmp/tf && terraform init -from-module=git::https://a.test/x.git", "git:fetch,http:read", "-from-module=git::..."),
        ("terraform", "terraform apply -auto-approve", RW, "the providers' APIs"),
        ("terraform", "terraform fmt -recursive", "none", "local"),
        ("terraform", "terraform validate", "none", "local"),
        ("corepack", "COREPACK_NPM_REGISTRY=http://127.0.0.1:8080 corepack pnpm@8.0.0 --version", RD, "fetches pnpm"),
        ("corepack", "corepack prepare pnpm@8 --activate", RD, "prepare"),
        ("corepack", "corepack enable", "none", "shims only"),
        ("rustup", "RUSTUP_DIST_SERVER=http://127.0.0.1:8080 rustup toolchain install nightly-2020-01-01 --profile minimal", RD, "toolchain install"),
        ("rustup", "rustup update", RD, "update"),
        ("rustup", "rustup self update", RD, "self update"),
        ("rustup", "rustup component add clippy", RD, "component add"),
        ("rustup", "rustup target add wasm32-unknown-unknown", RD, "target add"),
        ("rustup", "rustup default stable", RD, "default installs a missing toolchain"),
        ("rustup", "rustup show", "none", "local"),
        ("rustup", "rustup toolchain list", "none", "local"),
        ("rustup", "rustup run stable git push", "git:push", "finding 17: run runs its command"),
        ("rustup", "rustup run nightly -- git push", "git:push", "after --"),
        ("rustup", "rustup run stable cargo build", "none", "neighbour"),
        ("gpg", "gpg --batch --keyserver hkp://127.0.0.1:8080 --recv-keys 0123456789ABCDEF", RD, "a key server lookup"),
        ("gpg", "gpg --batch --fetch-keys http://127.0.0.1:8080/k.asc", RD, "--fetch-keys"),
        ("gpg", "gpg --batch --keyserver hkp://127.0.0.1:8080 --search-keys foo", RD, "--search-keys"),
        ("gpg", "gpg --refresh-keys", RD, "--refresh-keys"),
        ("gpg", "gpg --locate-external-keys a@b.test", RD, "a web key directory"),
        ("gpg", "gpg --recv 0123", RD, "a prefix, as gpg takes"),
        ("gpg", "gpg --keyserver hkp://127.0.0.1:8080 --send-keys 0123", WR, "--send-keys posts the key"),
        ("gpg", "gpg --verify x.sig x", "none", "neighbour: local"),
        ("gpg", "gpg --import key.asc", "none", "neighbour: a file"),
        ]:
    c(tool, line, exp, note)

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, rows in TABLES.items():
        with open(os.path.join(here, name), "w", encoding="utf-8") as f:
            for line, exp, note in rows:
                f.write("%s\t%s\t%s\n" % (line, exp, note))
    total = 0
    for tool, n in sorted(COUNTS.items()):
        print("%-14s %4d" % (tool, n))
        total += n
    print("%-14s %4d" % ("total", total))


if __name__ == "__main__":
    main()
