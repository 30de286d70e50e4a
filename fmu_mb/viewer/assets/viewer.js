/* fmu_mb 3-D viewer: draws the scene that fmu_mb.tools.view computes (bodies, joints,
   elements, contacts, poses per frame) with three.js (global THREE). Plain script, no
   network access, no modules: the page is one self-contained file. */
var FmuMbViewer = (function () {
  "use strict";
  var V3 = function (a) { return new THREE.Vector3(a[0], a[1], a[2]); };
  var Y = new THREE.Vector3(0, 1, 0), Z = new THREE.Vector3(0, 0, 1);

  function hashOptions() {
    var out = {};
    (location.hash || "").replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      out[decodeURIComponent(i < 0 ? kv : kv.slice(0, i))] =
        i < 0 ? "1" : decodeURIComponent(kv.slice(i + 1));
    });
    return out;
  }

  function numbers(s, n) {
    if (s === undefined) return null;
    var v = String(s).split(",").map(Number);
    if (v.length !== n || v.some(function (x) { return !isFinite(x); }))
      throw new Error("URL option: expected " + n + " numbers, received '" + s + "'");
    return v;
  }

  function niceStep(x) {
    var e = Math.pow(10, Math.floor(Math.log10(x))), m = x / e;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * e;
  }

  function fmt(x) {
    var a = Math.abs(x);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? x.toExponential(3) : String(+x.toPrecision(4));
  }

  function start(container, sc, opts) {
    opts = opts || {};
    var status = document.createElement("div");
    status.className = "fmu-mb-status";
    status.id = (container.id || "fmu-mb-viewer").replace(/-viewer$/, "") + "-status";
    status.dataset.state = "loading";
    status.dataset.errors = "";
    status.textContent = "loading";
    container.appendChild(status);
    var errors = [];
    function fail(msg) {
      errors.push(String(msg));
      status.dataset.state = "error";
      status.dataset.errors = errors.join(" | ");
      status.textContent = "error: " + errors.join(" | ");
    }
    window.addEventListener("error", function (ev) { fail(ev.message); });
    var consoleError = console.error;
    console.error = function () {                     // three.js reports WebGL errors here
      fail(Array.prototype.map.call(arguments, String).join(" "));
      return consoleError.apply(console, arguments);
    };
    try {
      return (api.current = build(container, sc, opts, status));
    } catch (exc) {
      fail(exc && exc.message ? exc.message : exc);
      var p = document.createElement("p");
      p.textContent = "The 3-D view could not be shown: " + (exc && exc.message || exc);
      container.appendChild(p);
      console.error(exc);
      return null;
    }
  }

  function build(container, sc, opts, status) {
    var h = opts.embedded ? {} : hashOptions();
    var flat = h.flat === "1";
    var showUi = !flat && h.ui !== "0";
    var size = sc.size, up = V3(sc.up);
    var frames = sc.frames, nf = frames.t.length, animated = nf > 1;
    var t0 = frames.t[0], t1 = frames.t[nf - 1];

    var renderer = new THREE.WebGLRenderer({antialias: !flat, preserveDrawingBuffer: true});
    renderer.setPixelRatio(flat ? 1 : (window.devicePixelRatio || 1));
    renderer.domElement.className = "fmu-mb-gl";
    container.appendChild(renderer.domElement);
    var scene = new THREE.Scene();
    scene.background = new THREE.Color(flat ? 0xffffff : 0xf3f5f7);
    var fov = h.fov ? Number(h.fov) : 40;
    var camera = new THREE.PerspectiveCamera(fov, 1, size / 2000, size * 200);
    if (!flat) {
      scene.add(new THREE.HemisphereLight(0xffffff, 0x8890a0, 1.6));
      var sun = new THREE.DirectionalLight(0xffffff, 1.6);
      sun.position.copy(up.clone().multiplyScalar(3).add(new THREE.Vector3(1, 0.6, 0.8)));
      scene.add(sun);
    }

    // ------------------------------------------------------------- materials
    var matCache = {};
    function material(color, ghost) {
      var key = color + (ghost ? "g" : "");
      if (matCache[key]) return matCache[key];
      var m = flat ? new THREE.MeshBasicMaterial({color: color})
        : new THREE.MeshStandardMaterial({color: color, roughness: 0.55, metalness: 0.1,
          transparent: !!ghost, opacity: ghost ? 0.22 : 1, depthWrite: !ghost});
      return (matCache[key] = m);
    }
    var grey = function () { return material("#555b66"); };

    function linkMesh(a, b, r, mat, cap) {
      var d = b.clone().sub(a), len = d.length(), g = new THREE.Group();
      if (len > 1e-12) {
        var m = new THREE.Mesh(new THREE.CylinderGeometry(r, r, len, 16), mat);
        m.position.copy(a).add(b).multiplyScalar(0.5);
        m.quaternion.setFromUnitVectors(Y, d.normalize());
        g.add(m);
      }
      [a, b].forEach(function (p) {
        var s = new THREE.Mesh(new THREE.SphereGeometry(r * (cap || 1.25), 16, 12), mat);
        s.position.copy(p);
        g.add(s);
      });
      return g;
    }

    function shapeMesh(s, color) {
      var mat = material(s.color || color, s.ghost), geo, obj;
      if (s.type === "link") return linkMesh(V3(s.a), V3(s.b), s.r, mat, s.cap);
      if (s.type === "plane" || s.type === "line") {    // free side along the shape's z (y)
        if (s.type === "plane") {
          var ext = (s.extent || 1.6) * size;
          obj = new THREE.Mesh(new THREE.PlaneGeometry(ext, ext),
            new THREE.MeshStandardMaterial({color: s.color || 0x6a8caf, transparent: true,
              opacity: 0.28, side: THREE.DoubleSide, depthWrite: false}));
        } else {
          var L = (s.extent || 2) * size / 2;
          var pts = [new THREE.Vector3(-L, 0, 0), new THREE.Vector3(L, 0, 0)];
          for (var i = -10; i <= 10; i++)
            pts.push(new THREE.Vector3(i * L / 10, 0, 0), new THREE.Vector3(i * L / 10 - size * 0.03, -size * 0.03, 0));
          obj = new THREE.LineSegments(new THREE.BufferGeometry().setFromPoints(pts),
            new THREE.LineBasicMaterial({color: 0x34495e}));
        }
        obj.position.copy(V3(s.c));
        obj.quaternion.set(s.q[0], s.q[1], s.q[2], s.q[3]);
        return obj;
      }
      if (s.type === "sphere") geo = new THREE.SphereGeometry(s.r, 32, 20);
      else if (s.type === "box") geo = new THREE.BoxGeometry(s.size[0], s.size[1], s.size[2]);
      else if (s.type === "ellipsoid") geo = new THREE.SphereGeometry(1, 32, 20);
      else if (s.type === "cylinder" || s.type === "capsule") {
        geo = s.type === "cylinder" ? new THREE.CylinderGeometry(s.r, s.r, s.h, 32)
          : new THREE.CapsuleGeometry(s.r, s.h, 8, 24);
        geo.rotateX(Math.PI / 2);                      // axis along the shape's z
      } else if (s.type === "mesh" && s.positions) {
        geo = new THREE.BufferGeometry();
        geo.setAttribute("position", new THREE.Float32BufferAttribute(s.positions, 3));
        geo.setIndex(s.indices);
        geo.computeVertexNormals();
      } else {                                          // a mesh by reference: a marker
        console.warn("fmu_mb viewer: mesh " + s.url + " is referenced, not embedded");
        geo = new THREE.SphereGeometry(size * 0.02, 12, 8);
      }
      obj = new THREE.Mesh(geo, mat);
      if (s.type === "ellipsoid") obj.scale.set(s.axes[0], s.axes[1], s.axes[2]);
      if (s.type === "mesh" && s.scale) obj.scale.set(s.scale[0], s.scale[1], s.scale[2]);
      if (s.c) obj.position.copy(V3(s.c));
      if (s.q) obj.quaternion.set(s.q[0], s.q[1], s.q[2], s.q[3]);
      return obj;
    }

    // ------------------------------------------------------------- bodies
    var groups = {}, index = {};
    var ground = new THREE.Group();
    scene.add(ground);
    groups.ground = ground;
    if (!flat) (sc.ground || []).forEach(function (s) { ground.add(shapeMesh(s, "#6d7580")); });
    var groundShapes = (sc.ground || []).some(function (s) { return s.type === "plane" || s.type === "line"; });
    sc.bodies.forEach(function (b, k) {
      var g = new THREE.Group();
      g.name = b.name;
      b.shapes.forEach(function (s) {
        if (flat && s.ghost) return;
        g.add(shapeMesh(s, b.color));
      });
      scene.add(g);
      groups[b.name] = g;
      index[b.name] = k;
    });

    var r0 = size * 0.012;
    function worldPoint(body, p, out) {
      out = out || new THREE.Vector3();
      out.set(p[0], p[1], p[2]);
      if (body !== "ground") out.applyQuaternion(groups[body].quaternion).add(groups[body].position);
      return out;
    }

    // ------------------------------------------------------------- joints, elements, contacts
    var updaters = [];
    if (!flat) {
      sc.joints.forEach(function (j) {
        if (j.kind === "distance") {
          var geo = new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3()]);
          var line = new THREE.Line(geo, new THREE.LineBasicMaterial({color: 0x333333}));
          scene.add(line);
          updaters.push(function () {
            var pa = worldPoint(j.a, j.pa), pb = worldPoint(j.b, j.pb), a = geo.attributes.position;
            a.setXYZ(0, pa.x, pa.y, pa.z); a.setXYZ(1, pb.x, pb.y, pb.z); a.needsUpdate = true;
          });
          return;
        }
        var g = groups[j.body], p = V3(j.p), axis = j.axis ? V3(j.axis).normalize() : null;
        if (j.kind === "revolute" && axis) {
          var c = new THREE.Mesh(new THREE.CylinderGeometry(r0 * 1.8, r0 * 1.8, r0 * 4, 24), grey());
          c.position.copy(p); c.quaternion.setFromUnitVectors(Y, axis); g.add(c);
        } else if (j.kind === "prismatic" && axis) {
          var arrow = new THREE.ArrowHelper(axis, p, size * 0.12, 0x555b66, size * 0.03, size * 0.015);
          g.add(arrow);
        } else {
          var s = new THREE.Mesh(new THREE.SphereGeometry(r0 * 1.8, 20, 14), grey());
          s.position.copy(p); g.add(s);
        }
        if (axis && sc.spatial) {
          var q = [p.clone().addScaledVector(axis, -size * 0.06), p.clone().addScaledVector(axis, size * 0.06)];
          g.add(new THREE.Line(new THREE.BufferGeometry().setFromPoints(q),
            new THREE.LineBasicMaterial({color: 0x000000})));
        }
        if (j.ground) {                                   // the ground's mark under the pin
          var cone = new THREE.Mesh(new THREE.ConeGeometry(r0 * 2.2, r0 * 4, 4), material("#3a3f47"));
          var gp = V3(j.gp);
          var down = up.clone().negate();
          cone.position.copy(gp).addScaledVector(down, r0 * 3.2);
          cone.quaternion.setFromUnitVectors(Y, up);
          ground.add(cone);
        }
      });

      sc.elements.forEach(function (e) {
        var pa0 = worldPoint(e.a, e.pa), pb0 = worldPoint(e.b, e.pb), L0 = pa0.distanceTo(pb0) || size * 0.1;
        var spring = e.kind === "tsda" && e.k > 0, obj = new THREE.Group();
        scene.add(obj);
        var coil = null, n = 160, turns = 10, rad = Math.min(size * 0.025, L0 * 0.12);
        if (spring) {
          coil = new THREE.Line(new THREE.BufferGeometry().setFromPoints(
            Array.from({length: n + 1}, function () { return new THREE.Vector3(); })),
            new THREE.LineBasicMaterial({color: 0xb03020}));
          obj.add(coil);
        }
        var barrel = null, rod = null;
        if (e.kind === "cylinder" || (e.kind === "tsda" && e.c > 0)) {
          var w = e.kind === "cylinder" ? size * 0.02 : rad * 0.45;
          barrel = new THREE.Mesh(new THREE.CylinderGeometry(w, w, L0 * 0.6, 20), material("#8a6d3b"));
          rod = new THREE.Mesh(new THREE.CylinderGeometry(w * 0.45, w * 0.45, L0 * 0.6, 16), material("#b0b4ba"));
          barrel.geometry.translate(0, L0 * 0.3, 0);
          rod.geometry.translate(0, L0 * 0.3, 0);
          obj.add(barrel); obj.add(rod);
        }
        if (!spring && !barrel) {
          var line = new THREE.Line(new THREE.BufferGeometry().setFromPoints([pa0, pb0]),
            new THREE.LineBasicMaterial({color: 0x7a3db0}));
          obj.add(line); coil = line; n = 1;
        }
        var u = new THREE.Vector3(), v = new THREE.Vector3(), w2 = new THREE.Vector3();
        updaters.push(function () {
          var pa = worldPoint(e.a, e.pa), pb = worldPoint(e.b, e.pb);
          var d = pb.clone().sub(pa), len = d.length();
          if (len < 1e-12) return;
          u.copy(d).divideScalar(len);
          if (coil) {
            v.copy(Math.abs(u.z) < 0.9 ? Z : Y).cross(u).normalize(); w2.copy(u).cross(v);
            var a = coil.geometry.attributes.position;
            for (var i = 0; i <= n; i++) {
              var s = i / n, th = 2 * Math.PI * turns * s, end = (n > 1 && (s < 0.06 || s > 0.94)) ? 0 : 1;
              var x = pa.x + d.x * s + end * rad * (Math.cos(th) * v.x + Math.sin(th) * w2.x);
              var y = pa.y + d.y * s + end * rad * (Math.cos(th) * v.y + Math.sin(th) * w2.y);
              var z = pa.z + d.z * s + end * rad * (Math.cos(th) * v.z + Math.sin(th) * w2.z);
              a.setXYZ(i, x, y, z);
            }
            a.needsUpdate = true;
            coil.geometry.computeBoundingSphere();
          }
          if (barrel) {
            barrel.position.copy(pa); barrel.quaternion.setFromUnitVectors(Y, u);
            rod.position.copy(pb); rod.quaternion.setFromUnitVectors(Y, u.clone().negate());
          }
        });
      });

      sc.contacts.forEach(function (c) {
        var g = groups[c.body], p = V3(c.p);
        if ((c.kind === "plane" || c.kind === "line") && c.body === "ground" && groundShapes) {
          return;                                       // drawn as the ground's shape
        } else if (c.kind === "plane") {
          var pl = new THREE.Mesh(new THREE.PlaneGeometry(size * 1.6, size * 1.6),
            new THREE.MeshStandardMaterial({color: 0x6a8caf, transparent: true, opacity: 0.28,
              side: THREE.DoubleSide, depthWrite: false}));
          pl.position.copy(p); pl.quaternion.setFromUnitVectors(Z, V3(c.n).normalize());
          if (c.body === "ground") {                  // centred under the mechanism
            var mid = V3(sc.bounds[0]).add(V3(sc.bounds[1])).multiplyScalar(0.5);
            var nn = V3(c.n).normalize();
            pl.position.copy(mid).addScaledVector(nn, nn.dot(p.clone().sub(mid)));
          }
          g.add(pl);
        } else if (c.kind === "line") {
          var n = V3(c.n).normalize(), d = new THREE.Vector3(-n.y, n.x, 0);
          var pts = [p.clone().addScaledVector(d, -size), p.clone().addScaledVector(d, size)];
          for (var i = -10; i <= 10; i++) {                 // hatching on the far side
            var q = p.clone().addScaledVector(d, i * size / 10);
            pts.push(q, q.clone().addScaledVector(n, -size * 0.03).addScaledVector(d, -size * 0.03));
          }
          g.add(new THREE.LineSegments(new THREE.BufferGeometry().setFromPoints(pts),
            new THREE.LineBasicMaterial({color: 0x34495e})));
        } else if (c.kind === "point") {
          var own = sc.bodies.filter(function (b) { return b.name === c.body; })[0];
          var s = new THREE.Mesh(new THREE.SphereGeometry(c.r > 0 ? c.r : r0, 24, 16),
            material(c.r > 0 && own ? own.color : "#2d3436"));   // a ball: the body's colour
          s.position.copy(p); g.add(s);
        }
      });

      sc.markers.forEach(function (m) {
        var s = new THREE.Mesh(new THREE.SphereGeometry(r0 * 1.1, 12, 8), material("#111111"));
        s.position.copy(V3(m.p)); groups[m.body].add(s);
      });
    }

    // ------------------------------------------------------------- world frame and grid
    var lo = V3(sc.bounds[0]), hi = V3(sc.bounds[1]), centre = lo.clone().add(hi).multiplyScalar(0.5);
    var step = niceStep(size / 8), gridInfo = "";
    if (!flat) {
      scene.add(new THREE.AxesHelper(size * 0.2));
      var half = Math.ceil((size * 0.8) / step) * step, grid = new THREE.GridHelper(2 * half, Math.round(2 * half / step), 0x8895a7, 0xc4ccd6);
      if (sc.spatial) {
        var level = Math.min(0, Math.min(lo.dot(up), hi.dot(up)));
        var c = centre.clone().addScaledVector(up, -centre.dot(up));
        c.set(Math.round(c.x / step) * step, Math.round(c.y / step) * step, Math.round(c.z / step) * step);
        c.addScaledVector(up, level - c.dot(up));
        grid.quaternion.setFromUnitVectors(Y, up);
        grid.position.copy(c);
      } else {
        grid.quaternion.setFromUnitVectors(Y, Z);
        grid.position.set(Math.round(centre.x / step) * step, Math.round(centre.y / step) * step, -size * 0.002);
      }
      scene.add(grid);
      gridInfo = "grid " + fmt(step) + " m, axes x red, y green, z blue (" + fmt(size * 0.2) + " m)";
    }

    // ------------------------------------------------------------- camera
    var cam = numbers(h.cam, 6), camUp = numbers(h.up, 3);
    camera.up.copy(camUp ? V3(camUp) : up);
    var dist = size * 0.6 / Math.tan(THREE.MathUtils.degToRad(fov) / 2);
    var target = centre.clone();
    if (cam) {
      camera.position.set(cam[0], cam[1], cam[2]);
      target.set(cam[3], cam[4], cam[5]);
    } else if (!sc.spatial) {
      camera.position.copy(centre).add(new THREE.Vector3(0, 0, dist));
      if (!camUp) camera.up.copy(up);
    } else {
      var a = Math.abs(up.x) < 0.9 ? new THREE.Vector3(1, 0, 0) : new THREE.Vector3(0, 1, 0);
      var h1 = a.addScaledVector(up, -a.dot(up)).normalize(), h2 = up.clone().cross(h1);
      var el = THREE.MathUtils.degToRad(25), az = THREE.MathUtils.degToRad(-55);
      var dir = h1.multiplyScalar(Math.cos(el) * Math.cos(az)).addScaledVector(h2, Math.cos(el) * Math.sin(az)).addScaledVector(up, Math.sin(el));
      camera.position.copy(centre).addScaledVector(dir, dist);
    }
    camera.lookAt(target);
    var controls = null;
    if (!flat) {
      controls = new THREE.OrbitControls(camera, renderer.domElement);
      controls.target.copy(target);
      controls.enableDamping = false;
      controls.update();
    }

    // ------------------------------------------------------------- poses over time
    var qa = new THREE.Quaternion(), qb = new THREE.Quaternion();
    function frameAt(t) {
      var lo_ = 0, hi_ = nf - 1;
      if (t <= frames.t[0]) return [0, 0, 0];
      if (t >= frames.t[hi_]) return [hi_, hi_, 0];
      while (hi_ - lo_ > 1) { var m = (lo_ + hi_) >> 1; if (frames.t[m] <= t) lo_ = m; else hi_ = m; }
      var dt = frames.t[hi_] - frames.t[lo_];
      return [lo_, hi_, dt > 0 ? (t - frames.t[lo_]) / dt : 0];
    }
    function setPose(t) {
      var f = frameAt(t), i = f[0], j = f[1], s = f[2];
      sc.bodies.forEach(function (b, k) {
        var g = groups[b.name], pa = frames.pos[i][k], pb = frames.pos[j][k];
        g.position.set(pa[0] + s * (pb[0] - pa[0]), pa[1] + s * (pb[1] - pa[1]), pa[2] + s * (pb[2] - pa[2]));
        var ea = frames.quat[i][k], eb = frames.quat[j][k];
        qa.set(ea[0], ea[1], ea[2], ea[3]); qb.set(eb[0], eb[1], eb[2], eb[3]);
        g.quaternion.slerpQuaternions(qa, qb, s);
      });
      updaters.forEach(function (u) { u(); });
      return f;
    }

    // traces of chosen points
    var traces = [];
    if (!flat && animated && sc.traces) {
      var palette = [0xd35400, 0x16a085, 0x8e44ad, 0x2c3e50, 0xc0392b];
      sc.traces.forEach(function (name, n) {
        var m = sc.markers.filter(function (x) { return x.name === name; })[0];
        var pts = [], k = index[m.body];
        for (var i = 0; i < nf; i++) {
          var p = V3(m.p), q = frames.quat[i][k];
          p.applyQuaternion(new THREE.Quaternion(q[0], q[1], q[2], q[3])).add(V3(frames.pos[i][k]));
          pts.push(p);
        }
        var line = new THREE.Line(new THREE.BufferGeometry().setFromPoints(pts),
          new THREE.LineBasicMaterial({color: palette[n % palette.length]}));
        line.frustumCulled = false;
        scene.add(line);
        traces.push(line);
      });
    }

    // impacts: a red ball at the contact point, shown for a moment after the impact
    var impacts = [];
    if (!flat && sc.impacts) {
      var red = new THREE.MeshBasicMaterial({color: 0xe74c3c, transparent: true, opacity: 0.8});
      var hold = Math.max((t1 - t0) * 0.03, 0.05);
      sc.impacts.forEach(function (im) {
        setPose(im.t);
        var ball = new THREE.Mesh(new THREE.SphereGeometry(r0 * 2.2, 16, 12), red);
        ball.position.copy(worldPoint(im.body, im.p));
        ball.visible = false;
        scene.add(ball);
        impacts.push({t: im.t, mesh: ball, hold: hold});
      });
    }

    // ------------------------------------------------------------- user interface
    var hud = document.createElement("div");
    hud.className = "fmu-mb-hud";
    if (!flat) container.appendChild(hud);
    var state = {t: t0, playing: false, speed: 1, loop: true, follow: "", last: null};
    var slider = null, label = null, playBtn = null, plot = null;
    if (showUi && animated) {
      var bar = document.createElement("div");
      bar.className = "fmu-mb-bar";
      playBtn = document.createElement("button");
      playBtn.textContent = "play";
      playBtn.title = "play / pause (space)";
      playBtn.onclick = function () {
        if (!state.playing && state.t >= t1) state.t = t0;
        state.playing = !state.playing; state.last = null;
        playBtn.textContent = state.playing ? "pause" : "play";
      };
      slider = document.createElement("input");
      slider.type = "range"; slider.min = 0; slider.max = 1000; slider.value = 0;
      slider.oninput = function () { state.t = t0 + (t1 - t0) * slider.value / 1000; };
      label = document.createElement("span");
      var speed = document.createElement("select");
      [0.05, 0.1, 0.25, 0.5, 1, 2, 4].forEach(function (v) {
        var o = document.createElement("option"); o.value = v; o.textContent = v + "x";
        if (v === 1) o.selected = true; speed.appendChild(o);
      });
      speed.title = "playback speed";
      speed.onchange = function () { state.speed = Number(speed.value); };
      var loop = document.createElement("label"), loopBox = document.createElement("input");
      loopBox.type = "checkbox"; loopBox.checked = true;
      loopBox.onchange = function () { state.loop = loopBox.checked; };
      loop.appendChild(loopBox); loop.appendChild(document.createTextNode("loop"));
      var follow = document.createElement("select");
      ["(fixed camera)"].concat(sc.bodies.map(function (b) { return b.name; })).forEach(function (n, i) {
        var o = document.createElement("option"); o.value = i ? n : ""; o.textContent = i ? "follow " + n : n;
        follow.appendChild(o);
      });
      follow.onchange = function () { state.follow = follow.value; state.followAt = null; };
      [playBtn, slider, label, speed, loop, follow].forEach(function (el) { bar.appendChild(el); });
      if (traces.length) {
        var tr = document.createElement("label"), trBox = document.createElement("input");
        trBox.type = "checkbox"; trBox.checked = true;
        trBox.onchange = function () { traces.forEach(function (l) { l.visible = trBox.checked; }); };
        tr.appendChild(trBox); tr.appendChild(document.createTextNode("traces"));
        bar.appendChild(tr);
      }
      container.appendChild(bar);
      container.tabIndex = 0;
      container.addEventListener("keydown", function (ev) {
        if (ev.code === "Space") { playBtn.onclick(); ev.preventDefault(); }
      });
      if (sc.plot && sc.plot.length) plot = makePlot();
    }

    function makePlot() {
      var box = document.createElement("div"), sel = document.createElement("select");
      box.className = "fmu-mb-plot";
      sc.plot.forEach(function (c, i) {
        var o = document.createElement("option"); o.value = i;
        o.textContent = c.name + (c.unit ? " [" + c.unit + "]" : ""); sel.appendChild(o);
      });
      var cv = document.createElement("canvas");
      cv.width = Math.round(Math.min(360, Math.max(220, (container.clientWidth || 800) * 0.36)));
      cv.height = Math.round(cv.width * 0.36);
      box.appendChild(sel); box.appendChild(cv); container.appendChild(box);
      var W = cv.width, H = cv.height, L = 46, B = 16;
      cv.onclick = function (ev) {
        var r = cv.getBoundingClientRect(), x = (ev.clientX - r.left) * W / r.width;
        state.t = Math.min(t1, Math.max(t0, t0 + (x - L) / (W - L - 4) * (t1 - t0)));
      };
      function draw(t) {
        var c = sc.plot[Number(sel.value)], v = c.values, ctx = cv.getContext("2d");
        var lo_ = Math.min.apply(null, v), hi_ = Math.max.apply(null, v);
        if (hi_ - lo_ < 1e-12 * (1 + Math.abs(hi_))) { lo_ -= 1; hi_ += 1; }
        var X = function (tt) { return L + (tt - t0) / ((t1 - t0) || 1) * (W - L - 4); };
        var Yp = function (y) { return 4 + (hi_ - y) / (hi_ - lo_) * (H - B - 8); };
        ctx.clearRect(0, 0, W, H); ctx.font = "10px sans-serif"; ctx.fillStyle = "#333";
        ctx.fillText(fmt(hi_), 2, 12); ctx.fillText(fmt(lo_), 2, H - B);
        ctx.fillText(fmt(t0) + " s", L, H - 3); ctx.fillText(fmt(t1) + " s", W - 40, H - 3);
        ctx.strokeStyle = "#ccd"; ctx.strokeRect(L, 4, W - L - 4, H - B - 8);
        ctx.strokeStyle = "#e74c3c";
        (sc.impacts || []).forEach(function (im) {
          ctx.beginPath(); ctx.moveTo(X(im.t), H - B - 4); ctx.lineTo(X(im.t), H - B - 10); ctx.stroke();
        });
        ctx.strokeStyle = "#1f77b4"; ctx.beginPath();
        for (var i = 0; i < v.length; i++) {
          var x = X(frames.t[i]), y = Yp(v[i]);
          if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
        }
        ctx.stroke();
        var f = frameAt(t), val = v[f[0]] + f[2] * (v[f[1]] - v[f[0]]);
        ctx.strokeStyle = "#000"; ctx.beginPath(); ctx.moveTo(X(t), 4); ctx.lineTo(X(t), H - B - 4); ctx.stroke();
        ctx.fillStyle = "#000"; ctx.fillText(fmt(val), Math.min(X(t) + 3, W - 50), 14);
      }
      sel.onchange = function () { draw(state.t); };
      return {draw: draw};
    }

    // ------------------------------------------------------------- the loop
    if (h.t !== undefined) {
      var th = Number(h.t);
      if (!isFinite(th)) throw new Error("URL option t: expected a time, received '" + h.t + "'");
      state.t = Math.min(t1, Math.max(t0, th));
    }
    var followPrev = new THREE.Vector3();
    function resize() {
      var w = container.clientWidth || window.innerWidth, hh = container.clientHeight || window.innerHeight;
      renderer.setSize(w, hh, true);
      camera.aspect = w / hh;
      camera.updateProjectionMatrix();
      status.dataset.width = w; status.dataset.height = hh;
    }
    function draw() {
      var f = setPose(state.t);
      if (state.follow) {
        var p = groups[state.follow].position;
        if (state.followAt) {
          var d = p.clone().sub(followPrev);
          camera.position.add(d);
          if (controls) controls.target.add(d);
        }
        state.followAt = true; followPrev.copy(p);
      }
      traces.forEach(function (l) { l.geometry.setDrawRange(0, f[0] + 1); });   // frames up to t
      impacts.forEach(function (im) {
        var age = state.t - im.t;
        im.mesh.visible = age >= 0 && age <= im.hold;
      });
      if (slider && document.activeElement !== slider)
        slider.value = Math.round(1000 * (state.t - t0) / ((t1 - t0) || 1));
      if (label) label.textContent = "t = " + state.t.toFixed(3) + " s";
      hud.innerHTML = "<b></b><br><span></span>";
      hud.firstChild.textContent = sc.name + (animated ? "" : " (start pose)");
      hud.lastChild.textContent = gridInfo;
      if (plot) plot.draw(state.t);
      if (controls) controls.update();
      renderer.render(scene, camera);
      status.dataset.time = state.t;
    }
    function tick(now) {
      if (state.playing) {
        if (state.last !== null) state.t += (now - state.last) / 1000 * state.speed;
        state.last = now;
        if (state.t > t1) {
          if (state.loop) state.t = t0;
          else { state.t = t1; state.playing = false; if (playBtn) playBtn.textContent = "play"; }
        }
      }
      draw();
      requestAnimationFrame(tick);
    }
    window.addEventListener("resize", function () { resize(); draw(); });
    window.addEventListener("hashchange", function () {
      var n = hashOptions();
      if (n.t !== undefined && isFinite(Number(n.t))) { state.t = Math.min(t1, Math.max(t0, Number(n.t))); draw(); }
    });
    resize();
    draw();
    if (status.dataset.state !== "error") { status.dataset.state = "ready"; status.textContent = "ready"; }
    requestAnimationFrame(tick);
    function setTime(t) {                 // for scripted frames (fmu-mb animate)
      state.t = Math.min(t1, Math.max(t0, Number(t)));
      state.playing = false;
      draw();
      return status.dataset.state;
    }
    return {scene: scene, camera: camera, renderer: renderer, state: state, draw: draw,
      setTime: setTime};
  }

  var api = {start: start, current: null};
  return api;
})();
